package e2e

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// rec is one Kafka record as a test means it, client-neutral. A nil key or
// value is Kafka's null, which is not the same as an empty one.
type rec struct {
	partition int32
	offset    int64
	key       []byte
	value     []byte
	headers   []hdr
	ts        time.Time // millisecond precision; zero = not asserted
}

type hdr struct {
	key   string
	value []byte
}

func (r rec) String() string {
	var hs []string
	for _, h := range r.headers {
		hs = append(hs, fmt.Sprintf("%s=%s", h.key, show(h.value)))
	}
	return fmt.Sprintf("p%d@%d key=%s value=%s headers=[%s] ts=%d", r.partition, r.offset, show(r.key), show(r.value), strings.Join(hs, ","), r.ts.UnixMilli())
}

func show(b []byte) string {
	if b == nil {
		return "null"
	}
	if len(b) > 24 {
		return fmt.Sprintf("%x…(%d)", b[:24], len(b))
	}
	return fmt.Sprintf("%x", b)
}

// recordSet is a deterministic mix spread round-robin over partitions:
// binary keys and values that are not UTF-8, null keys, empty keys, null
// values, empty values, repeated and null-valued headers, and explicit
// producer timestamps. Offsets are what a fresh topic must assign.
func recordSet(seed uint64, partitions int32, n int) []rec {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	bin := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		b[0] = 0xff // never valid UTF-8
		return b
	}
	base := time.UnixMilli(1787824800123)
	next := make([]int64, partitions)
	out := make([]rec, 0, n)
	for i := 0; i < n; i++ {
		p := int32(i) % partitions
		r := rec{partition: p, offset: next[p], ts: base.Add(time.Duration(i) * time.Millisecond)}
		next[p]++
		switch i % 6 {
		case 0:
			r.key, r.value = bin(16), bin(200)
			r.headers = []hdr{{"content-type", []byte("application/octet-stream")}, {"trace", bin(8)}, {"content-type", []byte("again")}}
		case 1:
			r.key, r.value = nil, bin(33) // null key
		case 2:
			r.key, r.value = []byte{}, []byte{} // empty, not null
			r.headers = []hdr{{"empty", []byte{}}}
		case 3:
			r.key, r.value = []byte(fmt.Sprintf("key-%d", i)), nil // tombstone
			r.headers = []hdr{{"nullhdr", nil}}
		case 4:
			r.key, r.value = bin(3), bytes.Repeat([]byte("compressible "), 50)
		case 5:
			r.key, r.value = []byte("\x00\x01\x02"), []byte(`{"json":true}`)
		}
		out = append(out, r)
	}
	return out
}

func byPartition(rs []rec) map[int32][]rec {
	m := map[int32][]rec{}
	for _, r := range rs {
		m[r.partition] = append(m[r.partition], r)
	}
	return m
}

// recOpts says which properties a reading client can express faithfully.
type recOpts struct {
	nullVsEmpty   bool // the client keeps a null key/value apart from an empty one
	nullHeaderVal bool // the client keeps a null header value apart from an empty one
	timestamps    bool
}

var exact = recOpts{nullVsEmpty: true, nullHeaderVal: true, timestamps: true}

// assertRecords compares got against want partition by partition, in offset
// order, and reports every difference.
func assertRecords(t testing.TB, who string, want, got []rec, o recOpts) {
	t.Helper()
	wp, gp := byPartition(want), byPartition(got)
	for p, ws := range wp {
		gs := gp[p]
		sort.SliceStable(gs, func(i, j int) bool { return gs[i].offset < gs[j].offset })
		if len(gs) != len(ws) {
			t.Errorf("%s: partition %d: %d records, want %d\n got: %v\nwant: %v", who, p, len(gs), len(ws), gs, ws)
			continue
		}
		for i := range ws {
			if d := diffRec(ws[i], gs[i], o); d != "" {
				t.Errorf("%s: partition %d record %d: %s\n got: %v\nwant: %v", who, p, i, d, gs[i], ws[i])
			}
		}
	}
	for p, gs := range gp {
		if _, ok := wp[p]; !ok {
			t.Errorf("%s: %d unexpected records on partition %d: %v", who, len(gs), p, gs)
		}
	}
}

func diffRec(w, g rec, o recOpts) string {
	var d []string
	if w.offset != g.offset {
		d = append(d, fmt.Sprintf("offset %d want %d", g.offset, w.offset))
	}
	cmp := func(what string, w, g []byte) {
		if !bytes.Equal(w, g) {
			d = append(d, fmt.Sprintf("%s %s want %s", what, show(g), show(w)))
		} else if o.nullVsEmpty && (w == nil) != (g == nil) {
			d = append(d, fmt.Sprintf("%s null=%v want null=%v", what, g == nil, w == nil))
		}
	}
	cmp("key", w.key, g.key)
	cmp("value", w.value, g.value)
	if len(w.headers) != len(g.headers) {
		d = append(d, fmt.Sprintf("%d headers want %d", len(g.headers), len(w.headers)))
	} else {
		for i := range w.headers {
			if w.headers[i].key != g.headers[i].key || !bytes.Equal(w.headers[i].value, g.headers[i].value) ||
				(o.nullHeaderVal && (w.headers[i].value == nil) != (g.headers[i].value == nil)) {
				d = append(d, fmt.Sprintf("header %d %s=%s want %s=%s", i, g.headers[i].key, show(g.headers[i].value), w.headers[i].key, show(w.headers[i].value)))
			}
		}
	}
	if o.timestamps && !w.ts.IsZero() && w.ts.UnixMilli() != g.ts.UnixMilli() {
		d = append(d, fmt.Sprintf("timestamp %d want %d", g.ts.UnixMilli(), w.ts.UnixMilli()))
	}
	return strings.Join(d, "; ")
}

// ---- franz-go ----

func newKgo(t testing.TB, seeds []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	base := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.FetchMaxWait(250 * time.Millisecond),
		kgo.RetryTimeout(20 * time.Second),
		kgo.MetadataMinAge(250 * time.Millisecond),
		kgo.ClientID("e2e"),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatalf("kgo client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func newAdmin(t testing.TB, seeds []string) *kadm.Client {
	t.Helper()
	return kadm.NewClient(newKgo(t, seeds))
}

func toKgo(topic string, r rec) *kgo.Record {
	kr := &kgo.Record{Topic: topic, Partition: r.partition, Key: r.key, Value: r.value, Timestamp: r.ts}
	for _, h := range r.headers {
		kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.key, Value: h.value})
	}
	return kr
}

func fromKgo(kr *kgo.Record) rec {
	r := rec{partition: kr.Partition, offset: kr.Offset, key: kr.Key, value: kr.Value, ts: kr.Timestamp}
	for _, h := range kr.Headers {
		r.headers = append(r.headers, hdr{h.Key, h.Value})
	}
	return r
}

// produceKgo produces rs synchronously with a client at its defaults
// (idempotent, acks=all) plus a manual partitioner, codec and opts, and
// checks the offsets the broker answered.
func produceKgo(t testing.TB, seeds []string, topic string, codec kgo.CompressionCodec, rs []rec, opts ...kgo.Opt) {
	t.Helper()
	cl := newKgo(t, seeds, append([]kgo.Opt{kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(codec)}, opts...)...)
	krs := make([]*kgo.Record, len(rs))
	index := map[*kgo.Record]int{}
	for i, r := range rs {
		krs[i] = toKgo(topic, r)
		index[krs[i]] = i
	}
	ctx := ctxT(t, 30*time.Second)
	// Results come back in completion order, not input order.
	for _, pr := range cl.ProduceSync(ctx, krs...) {
		i := index[pr.Record]
		if pr.Err != nil {
			t.Fatalf("kgo produce record %d (%v): %v", i, rs[i], pr.Err)
		}
		if pr.Record.Offset != rs[i].offset {
			t.Errorf("kgo produce record %d (%v): broker answered offset %d, want %d", i, rs[i], pr.Record.Offset, rs[i].offset)
		}
	}
}

// consumeKgo reads n records of topic from the start of every partition.
func consumeKgo(t testing.TB, seeds []string, topic string, partitions int32, n int) []rec {
	t.Helper()
	offs := map[int32]kgo.Offset{}
	for p := int32(0); p < partitions; p++ {
		offs[p] = kgo.NewOffset().AtStart()
	}
	cl := newKgo(t, seeds, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs}))
	return pollKgo(t, cl, n, 20*time.Second)
}

func pollKgo(t testing.TB, cl *kgo.Client, n int, limit time.Duration) []rec {
	t.Helper()
	ctx := ctxT(t, limit)
	var out []rec
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("kgo consumed %d of %d records within %s: %v", len(out), n, limit, out)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Errorf("kgo fetch %s[%d]: %v", topic, p, err)
		})
		fs.EachRecord(func(kr *kgo.Record) { out = append(out, fromKgo(kr)) })
	}
	return out
}

// ---- sarama ----

func saramaConfig() *sarama.Config {
	c := sarama.NewConfig()
	c.Version = sarama.V2_1_0_0 // Produce v7 and Fetch v10, negotiated down to the facade's windows
	c.ClientID = "e2e-sarama"
	c.Net.DialTimeout = 5 * time.Second
	c.Metadata.Retry.Backoff = 100 * time.Millisecond
	c.Consumer.MaxWaitTime = 250 * time.Millisecond
	c.Consumer.Return.Errors = true
	return c
}

func produceSarama(t testing.TB, seeds []string, topic string, codec sarama.CompressionCodec, rs []rec) {
	t.Helper()
	c := saramaConfig()
	c.Producer.Return.Successes = true
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Idempotent = true
	c.Net.MaxOpenRequests = 1
	c.Producer.Compression = codec
	c.Producer.Partitioner = sarama.NewManualPartitioner
	p, err := sarama.NewSyncProducer(seeds, c)
	if err != nil {
		t.Fatalf("sarama producer: %v", err)
	}
	defer p.Close()
	msgs := make([]*sarama.ProducerMessage, len(rs))
	for i, r := range rs {
		m := &sarama.ProducerMessage{Topic: topic, Partition: r.partition, Timestamp: r.ts}
		if r.key != nil {
			m.Key = sarama.ByteEncoder(r.key)
		}
		if r.value != nil {
			m.Value = sarama.ByteEncoder(r.value)
		}
		for _, h := range r.headers {
			m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(h.key), Value: h.value})
		}
		msgs[i] = m
	}
	// One at a time: SendMessages gives no per-message order guarantee
	// across partitions, and the asserted offsets need none.
	for i, m := range msgs {
		part, off, err := p.SendMessage(m)
		if err != nil {
			t.Fatalf("sarama produce record %d (%v): %v", i, rs[i], err)
		}
		if part != rs[i].partition || off != rs[i].offset {
			t.Errorf("sarama produce record %d: answered %d@%d, want %d@%d", i, part, off, rs[i].partition, rs[i].offset)
		}
	}
}

func consumeSarama(t testing.TB, seeds []string, topic string, partitions int32, n int) []rec {
	t.Helper()
	c, err := sarama.NewConsumer(seeds, saramaConfig())
	if err != nil {
		t.Fatalf("sarama consumer: %v", err)
	}
	defer c.Close()
	ch := make(chan *sarama.ConsumerMessage, n)
	for p := int32(0); p < partitions; p++ {
		pc, err := c.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("sarama consume %s[%d]: %v", topic, p, err)
		}
		defer pc.Close()
		go func() {
			for {
				select {
				case m, ok := <-pc.Messages():
					if !ok {
						return
					}
					ch <- m
				case e, ok := <-pc.Errors():
					if !ok {
						return
					}
					t.Errorf("sarama %s[%d]: %v", topic, p, e)
				}
			}
		}()
	}
	var out []rec
	deadline := time.After(20 * time.Second)
	for len(out) < n {
		select {
		case m := <-ch:
			r := rec{partition: m.Partition, offset: m.Offset, key: m.Key, value: m.Value, ts: m.Timestamp}
			for _, h := range m.Headers {
				r.headers = append(r.headers, hdr{string(h.Key), h.Value})
			}
			out = append(out, r)
		case <-deadline:
			t.Fatalf("sarama consumed %d of %d records: %v", len(out), n, out)
		}
	}
	return out
}

// ---- kafka-go ----

func produceKafkaGo(t testing.TB, seeds []string, topic string, codec kafkago.Compression, rs []rec) {
	t.Helper()
	w := &kafkago.Writer{
		Addr:         kafkago.TCP(seeds...),
		Topic:        topic,
		RequiredAcks: kafkago.RequireAll,
		Compression:  codec,
		BatchTimeout: 5 * time.Millisecond,
		BatchSize:    len(rs),
		Balancer: kafkago.BalancerFunc(func(m kafkago.Message, _ ...int) int {
			return m.Partition
		}),
		// Its own transport: kafka-go's shared default caches metadata across
		// writers for seconds and would call a topic created a moment ago
		// unknown without asking the broker.
		Transport: &kafkago.Transport{MetadataTTL: time.Second},
	}
	defer w.Transport.(*kafkago.Transport).CloseIdleConnections()
	defer w.Close()
	msgs := make([]kafkago.Message, len(rs))
	for i, r := range rs {
		m := kafkago.Message{Partition: int(r.partition), Key: r.key, Value: r.value, Time: r.ts}
		for _, h := range r.headers {
			m.Headers = append(m.Headers, kafkago.Header{Key: h.key, Value: h.value})
		}
		msgs[i] = m
	}
	ctx := ctxT(t, 30*time.Second)
	// One record per call keeps the asserted per-partition order exact:
	// the writer batches per partition and may reorder across batches.
	for i := range msgs {
		if err := w.WriteMessages(ctx, msgs[i]); err != nil {
			t.Fatalf("kafka-go produce record %d (%v): %v", i, rs[i], err)
		}
	}
}

// consumeKafkaGo reads, per partition, as many records as want holds there.
func consumeKafkaGo(t testing.TB, seeds []string, topic string, want []rec) []rec {
	t.Helper()
	ctx := ctxT(t, 20*time.Second)
	var out []rec
	for p, ws := range byPartition(want) {
		r := kafkago.NewReader(kafkago.ReaderConfig{
			Brokers: seeds, Topic: topic, Partition: int(p),
			MinBytes: 1, MaxBytes: 10 << 20, MaxWait: 250 * time.Millisecond,
		})
		if err := r.SetOffset(kafkago.FirstOffset); err != nil {
			t.Fatalf("kafka-go SetOffset: %v", err)
		}
		for range ws {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				r.Close()
				t.Fatalf("kafka-go read %s[%d]: %v (have %v)", topic, p, err, out)
			}
			g := rec{partition: int32(m.Partition), offset: m.Offset, key: m.Key, value: m.Value, ts: m.Time}
			for _, h := range m.Headers {
				g.headers = append(g.headers, hdr{h.Key, h.Value})
			}
			out = append(out, g)
		}
		r.Close()
	}
	return out
}
