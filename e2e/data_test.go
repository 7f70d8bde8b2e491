package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"testing"
	"time"

	"github.com/IBM/sarama"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// createTopic makes a topic of the given width through CreateTopics.
func createTopic(t testing.TB, tg target, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	adm := newAdmin(t, tg.bootstrap)
	res, err := adm.CreateTopic(ctxT(t, 15*time.Second), partitions, 1, configs, topic)
	if err != nil || res.Err != nil {
		t.Fatalf("CreateTopics %s (%d partitions): %v / %v %s", topic, partitions, err, res.Err, res.ErrMessage)
	}
	if res.NumPartitions != partitions {
		t.Errorf("CreateTopics %s answered %d partitions, want %d", topic, res.NumPartitions, partitions)
	}
}

type codecCase struct {
	name   string
	kgo    kgo.CompressionCodec
	sarama sarama.CompressionCodec
	kgoc   kafkago.Compression
}

var codecs = []codecCase{
	{"gzip", kgo.GzipCompression(), sarama.CompressionGZIP, kafkago.Gzip},
	{"snappy", kgo.SnappyCompression(), sarama.CompressionSnappy, kafkago.Snappy},
	{"lz4", kgo.Lz4Compression(), sarama.CompressionLZ4, kafkago.Lz4},
	{"zstd", kgo.ZstdCompression(), sarama.CompressionZSTD, kafkago.Zstd},
}

// testCodecs: every producer library, every codec, the record mix of
// recordSet; each topic read back exactly by franz-go, by the producing
// library's own consumer, and checked as stored envelopes in Queen.
func testCodecs(t *testing.T, tg target) {
	type producer struct {
		name    string
		produce func(t testing.TB, seeds []string, topic string, c codecCase, rs []rec)
		consume func(t testing.TB, seeds []string, topic string, want []rec) []rec
		opts    recOpts
	}
	const parts = 2
	producers := []producer{
		{"kgo", func(t testing.TB, s []string, topic string, c codecCase, rs []rec) {
			produceKgo(t, s, topic, c.kgo, rs)
		},
			func(t testing.TB, s []string, topic string, want []rec) []rec {
				return consumeKgo(t, s, topic, parts, len(want))
			}, exact},
		{"sarama", func(t testing.TB, s []string, topic string, c codecCase, rs []rec) {
			produceSarama(t, s, topic, c.sarama, rs)
		},
			func(t testing.TB, s []string, topic string, want []rec) []rec {
				return consumeSarama(t, s, topic, parts, len(want))
			}, exact},
		// kafka-go's Reader hands a null key or value over as an empty one,
		// so only the bytes are compared for its read; franz-go's read and
		// the stored envelopes of the same topic assert null-ness exactly.
		{"kafka-go", func(t testing.TB, s []string, topic string, c codecCase, rs []rec) {
			produceKafkaGo(t, s, topic, c.kgoc, rs)
		},
			consumeKafkaGo, recOpts{timestamps: true}},
	}
	for pi, pr := range producers {
		for ci, c := range codecs {
			t.Run(pr.name+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				topic := uniq("codec-" + pr.name + "-" + c.name)
				createTopic(t, tg, topic, parts, nil)
				want := recordSet(uint64(pi*10+ci+1), parts, 12)
				pr.produce(t, tg.bootstrap, topic, c, want)
				assertRecords(t, "franz-go read", want, consumeKgo(t, tg.bootstrap, topic, parts, len(want)), exact)
				assertRecords(t, pr.name+" read", want, pr.consume(t, tg.bootstrap, topic, want), pr.opts)
				assertStoredEnvelopes(t, tg, topic, want)
			})
		}
	}
}

// assertStoredEnvelopes reads every partition of want through Queen's fetch
// route and checks each payload is exactly the envelope of its record.
func assertStoredEnvelopes(t testing.TB, tg target, topic string, want []rec) {
	t.Helper()
	for p, ws := range byPartition(want) {
		res := tg.dev.fetch(t, topic, strconv.Itoa(int(p)), 0)
		if res.Error != "" {
			t.Fatalf("fetch route %s[%d]: error %s", topic, p, res.Error)
		}
		if len(res.Records) != len(ws) || res.HighWatermark != int64(len(ws)) {
			t.Fatalf("fetch route %s[%d]: %d records, hw %d; want %d", topic, p, len(res.Records), res.HighWatermark, len(ws))
		}
		for i, w := range ws {
			r := res.Records[i]
			if r.Offset != w.offset {
				t.Errorf("fetch route %s[%d] record %d: offset %d want %d", topic, p, i, r.Offset, w.offset)
			}
			e := decodeEnvelope(t, r.Payload)
			if strp(e.K) != strp(b64(w.key)) || strp(e.V) != strp(b64(w.value)) {
				t.Errorf("envelope %s[%d]@%d: k=%s v=%s, want k=%s v=%s (payload %s)", topic, p, w.offset, strp(e.K), strp(e.V), strp(b64(w.key)), strp(b64(w.value)), r.Payload)
			}
			if e.T == nil || *e.T != w.ts.UnixMilli() {
				t.Errorf("envelope %s[%d]@%d: t=%v want %d", topic, p, w.offset, e.T, w.ts.UnixMilli())
			}
			if len(e.H) != len(w.headers) {
				t.Errorf("envelope %s[%d]@%d: %d headers want %d (payload %s)", topic, p, w.offset, len(e.H), len(w.headers), r.Payload)
				continue
			}
			for j, h := range w.headers {
				if e.H[j].K != h.key || strp(e.H[j].V) != strp(b64(h.value)) {
					t.Errorf("envelope %s[%d]@%d header %d: %s=%s want %s=%s", topic, p, w.offset, j, e.H[j].K, strp(e.H[j].V), h.key, strp(b64(h.value)))
				}
			}
			if len(w.headers) == 0 && bytes.Contains(r.Payload, []byte(`"h"`)) {
				t.Errorf("envelope %s[%d]@%d carries h with no headers: %s", topic, p, w.offset, r.Payload)
			}
		}
	}
}

// testEnvelopeThroughFetchRoute pins the exact bytes of one stored
// envelope (contract §11): keys in the order h, k, t, v, standard base64
// with padding, headers as name and base64 value, t the producer's
// CreateTime.
func testEnvelopeThroughFetchRoute(t *testing.T, tg target) {
	topic := uniq("envelope")
	createTopic(t, tg, topic, 1, nil)
	r := rec{partition: 0, offset: 0, key: []byte("order-42"), value: []byte(`{"total": 12}`),
		headers: []hdr{{"content-type", []byte("application/json")}}, ts: time.UnixMilli(1787824800123)}
	produceKgo(t, tg.bootstrap, topic, kgo.NoCompression(), []rec{r})
	res := tg.dev.fetch(t, topic, "0", 0)
	if len(res.Records) != 1 {
		t.Fatalf("fetch route: %d records, want 1: %+v", len(res.Records), res)
	}
	want := `{"h":[{"k":"content-type","v":"YXBwbGljYXRpb24vanNvbg=="}],"k":"b3JkZXItNDI=","t":1787824800123,"v":"eyJ0b3RhbCI6IDEyfQ=="}`
	if got := string(res.Records[0].Payload); got != want {
		t.Errorf("stored payload\n got %s\nwant %s", got, want)
	}
}

// testNativePushReadByKafka: a Queen producer's JSON document reaches a
// Kafka consumer as a record with no key whose value is the document's
// text and whose timestamp is the append time; a queue created only
// natively shows up in Kafka metadata within a few seconds.
func testNativePushReadByKafka(t *testing.T, tg target) {
	topic := uniq("native")
	createTopic(t, tg, topic, 4, nil)
	before := time.Now().Add(-time.Second)
	doc := `{"orderId":8894,"total":99}`
	offs := tg.dev.push(t, pushItem{Queue: topic, Partition: "3", Payload: json.RawMessage(doc)},
		pushItem{Queue: topic, Partition: "3", Payload: json.RawMessage(`"just a string"`)},
		// Looks like an envelope but is not one (k is not base64): served as itself.
		pushItem{Queue: topic, Partition: "3", Payload: json.RawMessage(`{"k":"%%%","v":null}`)})
	after := time.Now().Add(time.Second)
	if offs[0] != 0 || offs[1] != 1 || offs[2] != 2 {
		t.Fatalf("push offsets %v, want [0 1 2]", offs)
	}
	cl := newKgo(t, tg.bootstrap, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {3: kgo.NewOffset().At(0)}}))
	got := pollKgo(t, cl, 3, 15*time.Second)
	wantVals := []string{doc, `"just a string"`, `{"k":"%%%","v":null}`}
	for i, g := range got {
		if g.offset != int64(i) || g.key != nil || string(g.value) != wantVals[i] || len(g.headers) != 0 {
			t.Errorf("native record %d read as %v; want offset %d, null key, value %s, no headers", i, g, i, wantVals[i])
		}
		if g.ts.Before(before) || g.ts.After(after) {
			t.Errorf("native record %d timestamp %s outside the push window [%s, %s]", i, g.ts, before, after)
		}
	}

	// A queue nobody created through Kafka: pushed natively, then visible.
	nat := uniq("native-only")
	tg.dev.push(t, pushItem{Queue: nat, Partition: "0", Payload: json.RawMessage(`{"a":1}`)})
	adm := newAdmin(t, tg.bootstrap)
	eventually(t, 8*time.Second, "natively created queue in Kafka metadata", func() (bool, string) {
		tds, err := adm.ListTopics(ctxT(t, 5*time.Second))
		if err != nil {
			return false, err.Error()
		}
		if !tds.Has(nat) {
			return false, fmt.Sprintf("%s not listed", nat)
		}
		return true, ""
	})
	c2 := newKgo(t, tg.bootstrap, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{nat: {0: kgo.NewOffset().AtStart()}}))
	if g := pollKgo(t, c2, 1, 15*time.Second); string(g[0].value) != `{"a":1}` || g[0].key != nil {
		t.Errorf("native-only queue read as %v", g[0])
	}
}

// testIdempotentDefault: a franz-go producer at its defaults is idempotent
// (it must have been granted a producer id), and many batches in flight on
// two partitions land exactly once, at contiguous offsets.
func testIdempotentDefault(t *testing.T, tg target) {
	topic := uniq("idem")
	createTopic(t, tg, topic, 2, nil)
	cl := newKgo(t, tg.bootstrap, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(time.Millisecond), kgo.MaxBufferedRecords(10000))
	const n = 400
	ctx := ctxT(t, 30*time.Second)
	done := make(chan *kgo.Record, n)
	for i := 0; i < n; i++ {
		r := &kgo.Record{Key: []byte(strconv.Itoa(i % 7)), Value: []byte(strconv.Itoa(i))}
		cl.Produce(ctx, r, func(r *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce %s: %v", r.Value, err)
			}
			done <- r
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	seen := map[int32]map[int64]bool{0: {}, 1: {}}
	for i := 0; i < n; i++ {
		r := <-done
		if r.ProducerID < 0 {
			t.Fatalf("record produced without a producer id (%d): the default producer did not get InitProducerId", r.ProducerID)
		}
		if seen[r.Partition][r.Offset] {
			t.Errorf("offset %d of partition %d answered twice", r.Offset, r.Partition)
		}
		seen[r.Partition][r.Offset] = true
	}
	adm := newAdmin(t, tg.bootstrap)
	ends, err := adm.ListEndOffsets(ctxT(t, 10*time.Second), topic)
	if err != nil {
		t.Fatalf("ListEndOffsets: %v", err)
	}
	total := int64(0)
	for p, offs := range seen {
		end, _ := ends.Lookup(topic, p)
		if end.Offset != int64(len(offs)) {
			t.Errorf("partition %d: end offset %d, but %d records were answered", p, end.Offset, len(offs))
		}
		for o := int64(0); o < int64(len(offs)); o++ {
			if !offs[o] {
				t.Errorf("partition %d: offset %d never answered (offsets not contiguous)", p, o)
			}
		}
		total += end.Offset
	}
	if total != n {
		t.Errorf("%d records stored, want exactly %d", total, n)
	}
	got := consumeKgo(t, tg.bootstrap, topic, 2, n)
	vals := map[string]int{}
	for _, g := range got {
		vals[string(g.value)]++
	}
	for i := 0; i < n; i++ {
		if vals[strconv.Itoa(i)] != 1 {
			t.Errorf("value %d consumed %d times", i, vals[strconv.Itoa(i)])
		}
	}
}

// rawBatch builds a RecordBatch v2 for an idempotent producer, CRC and all.
func rawBatch(pid int64, epoch int16, seq int32, values ...string) []byte {
	return recordBatch(0, pid, epoch, seq, values...)
}

// recordBatch builds a RecordBatch v2 with the given attributes (0x10 marks
// a transactional batch), CRC and all.
func recordBatch(attrs int16, pid int64, epoch int16, seq int32, values ...string) []byte {
	now := time.Now().UnixMilli()
	var recs []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: int32(i), Key: []byte("k"), Value: []byte(v)}
		body := r.AppendTo(nil)
		// AppendTo writes the length prefix from the Length field; recompute.
		r.Length = int32(len(body) - varintLen(r.Length))
		recs = r.AppendTo(recs)
	}
	b := kmsg.RecordBatch{
		FirstOffset: 0, Magic: 2, Attributes: attrs, LastOffsetDelta: int32(len(values) - 1),
		FirstTimestamp: now, MaxTimestamp: now, ProducerID: pid, ProducerEpoch: epoch,
		FirstSequence: seq, PartitionLeaderEpoch: -1, NumRecords: int32(len(values)), Records: recs,
	}
	raw := b.AppendTo(nil)
	b.Length = int32(len(raw) - 12)
	raw = b.AppendTo(nil)
	crc := crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli))
	raw[17], raw[18], raw[19], raw[20] = byte(crc>>24), byte(crc>>16), byte(crc>>8), byte(crc)
	return raw
}

func varintLen(v int32) int {
	u := uint32(v<<1) ^ uint32(v>>31)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

// testRetriedBatch sends the same idempotent ProduceRequest twice on one
// connection, the way a client retries after a lost answer: one copy stored
// and the same base offset answered. A gap in the sequence is refused
// OUT_OF_ORDER_SEQUENCE_NUMBER with nothing written. A producer the node
// holds no window for is accepted mid-sequence and starts its window, as
// Apache Kafka 3.9 does (issue 9; this test pinned seed 001's refusal
// before), and a gap on that window is refused in turn.
func testRetriedBatch(t *testing.T, tg target) {
	topic := uniq("retry")
	createTopic(t, tg, topic, 1, nil)
	cl := newKgo(t, tg.bootstrap, kgo.RequiredAcks(kgo.AllISRAcks()))
	ctx := ctxT(t, 30*time.Second)
	// Learn the partition leader so every request below rides one
	// connection to the node that holds the sequence window.
	mresp, err := metadataReq(topic).RequestWith(ctx, cl)
	if err != nil || len(mresp.Topics) != 1 || len(mresp.Topics[0].Partitions) != 1 {
		t.Fatalf("metadata: %v %+v", err, mresp)
	}
	br := cl.Broker(int(mresp.Topics[0].Partitions[0].Leader))

	ireq := kmsg.NewPtrInitProducerIDRequest()
	ireq.TransactionTimeoutMillis = 60000
	iraw, err := br.Request(ctx, ireq)
	if err != nil {
		t.Fatalf("InitProducerId: %v", err)
	}
	iresp := iraw.(*kmsg.InitProducerIDResponse)
	if iresp.ErrorCode != 0 || iresp.ProducerID < 0 {
		t.Fatalf("InitProducerId: error %d pid %d", iresp.ErrorCode, iresp.ProducerID)
	}
	pid, epoch := iresp.ProducerID, iresp.ProducerEpoch

	produce := func(batch []byte) (int16, int64) {
		t.Helper()
		raw, err := br.Request(ctx, produceRaw(topic, 0, 10000, batch))
		if err != nil {
			t.Fatalf("produce: %v", err)
		}
		resp := raw.(*kmsg.ProduceResponse)
		p := resp.Topics[0].Partitions[0]
		return p.ErrorCode, p.BaseOffset
	}
	// Something before, so the batch's base offset is not trivially 0.
	if code, base := produce(rawBatch(pid, epoch, 0, "a", "b")); code != 0 || base != 0 {
		t.Fatalf("first batch: error %d base %d, want 0/0", code, base)
	}
	batch := rawBatch(pid, epoch, 2, "c", "d", "e")
	code1, base1 := produce(batch)
	code2, base2 := produce(batch)
	if code1 != 0 || base1 != 2 {
		t.Errorf("batch: error %d base %d, want 0/2", code1, base1)
	}
	if code2 != 0 || base2 != base1 {
		t.Errorf("retried batch: error %d (%v) base %d, want no error and the first answer's base %d", code2, kerr.ErrorForCode(code2), base2, base1)
	}
	// A gap: sequence 10 where 5 is next.
	if code, _ := produce(rawBatch(pid, epoch, 10, "gap")); code != kerr.OutOfOrderSequenceNumber.Code {
		t.Errorf("gapped batch: error %d (%v), want OUT_OF_ORDER_SEQUENCE_NUMBER", code, kerr.ErrorForCode(code))
	}
	// A producer id this node holds no window for, mid-sequence.
	if code, base := produce(rawBatch(pid+1_000_000, 0, 42, "stranger")); code != 0 || base != 5 {
		t.Errorf("unknown producer at sequence 42: error %d (%v) base %d, want 0/5 (accepted, as Kafka 3.9)", code, kerr.ErrorForCode(code), base)
	}
	if code, _ := produce(rawBatch(pid+1_000_000, 0, 44, "stranger gap")); code != kerr.OutOfOrderSequenceNumber.Code {
		t.Errorf("gap on the stranger's window: error %d (%v), want OUT_OF_ORDER_SEQUENCE_NUMBER", code, kerr.ErrorForCode(code))
	}
	res := tg.dev.fetch(t, topic, "0", 0)
	var vals []string
	for _, r := range res.Records {
		e := decodeEnvelope(t, r.Payload)
		v, _ := base64.StdEncoding.DecodeString(*e.V)
		vals = append(vals, string(v))
	}
	if fmt.Sprint(vals) != "[a b c d e stranger]" || res.HighWatermark != 6 {
		t.Errorf("stored %v (hw %d), want [a b c d e stranger] (hw 6): a retry or a gap was written", vals, res.HighWatermark)
	}
	// The window still accepts the true next sequence.
	if code, base := produce(rawBatch(pid, epoch, 5, "f")); code != 0 || base != 6 {
		t.Errorf("next in-sequence batch: error %d (%v) base %d, want 0/6", code, kerr.ErrorForCode(code), base)
	}
}

// testAdmin walks a topic's life through kadm: validate-only, create with
// configs, the refusals, describe, alter, widen, delete.
func testAdmin(t *testing.T, tg target) {
	adm := newAdmin(t, tg.bootstrap)
	ctx := ctxT(t, 60*time.Second)
	topic := uniq("admin")
	ret := "3600000"
	policy := "delete"

	// validate_only creates nothing.
	vres, err := adm.ValidateCreateTopics(ctx, 3, 1, map[string]*string{"retention.ms": &ret}, topic)
	if err != nil || vres[topic].Err != nil {
		t.Fatalf("validate-only CreateTopics: %v %v", err, vres[topic].Err)
	}
	if res := tg.dev.fetch(t, topic, "0", 0); res.Error != "UNKNOWN_TOPIC_OR_PARTITION" {
		t.Errorf("validate-only CreateTopics created queue %s (fetch route: %+v)", topic, res)
	}

	cres, err := adm.CreateTopic(ctx, 3, 1, map[string]*string{"retention.ms": &ret, "cleanup.policy": &policy}, topic)
	if err != nil || cres.Err != nil || cres.NumPartitions != 3 || cres.ReplicationFactor != 1 {
		t.Fatalf("CreateTopics: %v %v %s partitions %d rf %d", err, cres.Err, cres.ErrMessage, cres.NumPartitions, cres.ReplicationFactor)
	}
	again, _ := adm.CreateTopic(ctx, 3, 1, nil, topic)
	if !errors.Is(again.Err, kerr.TopicAlreadyExists) {
		t.Errorf("second CreateTopics: %v, want TOPIC_ALREADY_EXISTS", again.Err)
	}
	short := "10"
	if r, _ := adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": &short}, uniq("admin-short")); !errors.Is(r.Err, kerr.InvalidConfig) {
		t.Errorf("retention.ms=10: %v, want INVALID_CONFIG", r.Err)
	}
	bogus := "shred"
	if r, _ := adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": &bogus}, uniq("admin-policy")); !errors.Is(r.Err, kerr.InvalidConfig) {
		t.Errorf("cleanup.policy=shred: %v, want INVALID_CONFIG", r.Err)
	}
	if r, _ := adm.CreateTopic(ctx, 1, 1, nil, "bad/name"); !errors.Is(r.Err, kerr.InvalidTopicException) {
		t.Errorf("topic bad/name: %v, want INVALID_TOPIC_EXCEPTION", r.Err)
	}
	if r, _ := adm.CreateTopic(ctx, 1, 1, nil, "__internal-"+topic); r.Err == nil {
		t.Errorf("topic __internal-…: created, want a refusal")
	}
	if r, _ := adm.CreateTopic(ctx, -1, -1, nil, topic+"-dflt"); r.Err != nil || r.NumPartitions < 1 {
		t.Errorf("CreateTopics with -1 partitions: %v partitions %d", r.Err, r.NumPartitions)
	}

	// Describe: the retention the topic was created with.
	if rc := describeTopicConfig(t, adm, topic); configValue(rc, "retention.ms") != ret {
		t.Errorf("DescribeConfigs retention.ms = %q, want %q (configs %+v)", configValue(rc, "retention.ms"), ret, rc.Configs)
	}

	// Incremental alter on a topic the facade created.
	newRet := "7200000"
	ares, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: &newRet}}, topic)
	if err != nil || len(ares) != 1 || ares[0].Err != nil {
		t.Errorf("IncrementalAlterConfigs retention.ms: %v %+v", err, ares)
	} else if rc := describeTopicConfig(t, adm, topic); configValue(rc, "retention.ms") != newRet {
		t.Errorf("after alter, retention.ms = %q, want %q", configValue(rc, "retention.ms"), newRet)
	}
	// The deprecated full-replacement AlterConfigs: a key it does not name
	// goes back to its default (seed 001), here retention.ms to -1.
	compact := "compact"
	if ares, err := adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "cleanup.policy", Value: &compact}}, topic); err != nil || len(ares) != 1 || ares[0].Err != nil {
		t.Errorf("AlterConfigs cleanup.policy=compact: %v %+v", err, ares)
	} else {
		rc := describeTopicConfig(t, adm, topic)
		if v := configValue(rc, "retention.ms"); v != "" && v != "-1" {
			t.Errorf("after a full-replacement AlterConfigs naming only cleanup.policy, retention.ms = %q, want its default", v)
		}
		if v := configValue(rc, "cleanup.policy"); v != compact {
			t.Errorf("after AlterConfigs cleanup.policy=compact, DescribeConfigs says %q", v)
		}
	}
	// A natively created queue is not the facade's to alter.
	nat := uniq("admin-native")
	tg.dev.push(t, pushItem{Queue: nat, Partition: "0", Payload: json.RawMessage(`1`)})
	eventually(t, 8*time.Second, "native queue listed", func() (bool, string) {
		tds, err := adm.ListTopics(ctx, nat)
		return err == nil && tds.Has(nat) && tds[nat].Err == nil, fmt.Sprint(err)
	})
	if ares, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: &newRet}}, nat); err == nil && len(ares) == 1 && ares[0].Err == nil {
		t.Errorf("IncrementalAlterConfigs on a natively created queue succeeded, want a refusal with the reason")
	}

	// Widen 3 → 5; equal and smaller refused.
	pres, err := adm.CreatePartitions(ctx, 2, topic)
	if err != nil || pres[topic].Err != nil {
		t.Fatalf("CreatePartitions +2: %v %v %s", err, pres[topic].Err, pres[topic].ErrMessage)
	}
	eventually(t, 5*time.Second, "widened topic in metadata", func() (bool, string) {
		tds, err := adm.ListTopics(ctx, topic)
		if err != nil {
			return false, err.Error()
		}
		n := len(tds[topic].Partitions)
		return n == 5, fmt.Sprintf("%d partitions", n)
	})
	if r, _ := adm.UpdatePartitions(ctx, 5, topic); !errors.Is(r[topic].Err, kerr.InvalidPartitions) {
		t.Errorf("CreatePartitions to the same count: %v, want INVALID_PARTITIONS", r[topic].Err)
	}
	if r, _ := adm.UpdatePartitions(ctx, 2, topic); !errors.Is(r[topic].Err, kerr.InvalidPartitions) {
		t.Errorf("CreatePartitions to fewer: %v, want INVALID_PARTITIONS", r[topic].Err)
	}
	produceKgo(t, tg.bootstrap, topic, kgo.NoCompression(), []rec{{partition: 4, offset: 0, value: []byte("wide")}})

	// Delete: gone from metadata and from Queen.
	dres, err := adm.DeleteTopics(ctx, topic)
	if err != nil || dres[topic].Err != nil {
		t.Fatalf("DeleteTopics: %v %v", err, dres[topic].Err)
	}
	if res := tg.dev.fetch(t, topic, "0", 0); res.Error != "UNKNOWN_TOPIC_OR_PARTITION" {
		t.Errorf("after DeleteTopics the queue still exists: %+v", res)
	}
	eventually(t, 5*time.Second, "deleted topic gone from metadata", func() (bool, string) {
		resp, err := metadataReq(topic).RequestWith(ctx, newKgo(t, tg.bootstrap))
		if err != nil {
			return false, err.Error()
		}
		return resp.Topics[0].ErrorCode == kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("error code %d", resp.Topics[0].ErrorCode)
	})
	if r, _ := adm.DeleteTopics(ctx, topic); !errors.Is(r[topic].Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("second DeleteTopics: %v, want UNKNOWN_TOPIC_OR_PARTITION", r[topic].Err)
	}
}

func configValue(rc kadm.ResourceConfig, name string) string {
	for _, c := range rc.Configs {
		if c.Key == name && c.Value != nil {
			return *c.Value
		}
	}
	return ""
}

// describeTopicConfig is topic's DescribeConfigs answer; any error fails t.
func describeTopicConfig(t testing.TB, adm *kadm.Client, topic string) kadm.ResourceConfig {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(ctxT(t, 15*time.Second), topic)
	if err != nil {
		t.Fatalf("DescribeConfigs: %v", err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("DescribeConfigs %s: %v %v", topic, err, rc.Err)
	}
	return rc
}

// testListOffsets: the two sentinels exactly, and a concrete timestamp on
// the append clock: the earliest offset appended at or after it, "no match"
// (-1 on the wire) past the end.
func testListOffsets(t *testing.T, tg target) {
	topic := uniq("lo")
	createTopic(t, tg, topic, 1, nil)
	produceKgo(t, tg.bootstrap, topic, kgo.NoCompression(), []rec{{offset: 0, value: []byte("a")}, {offset: 1, value: []byte("b")}, {offset: 2, value: []byte("c")}})
	time.Sleep(20 * time.Millisecond)
	mid := time.Now().UnixMilli()
	time.Sleep(20 * time.Millisecond)
	produceKgo(t, tg.bootstrap, topic, kgo.NoCompression(), []rec{{offset: 3, value: []byte("d")}, {offset: 4, value: []byte("e")}})
	time.Sleep(20 * time.Millisecond)
	late := time.Now().UnixMilli()

	adm := newAdmin(t, tg.bootstrap)
	ctx := ctxT(t, 20*time.Second)
	check := func(what string, lo kadm.ListedOffsets, err error, want int64) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", what, err)
			return
		}
		o, ok := lo.Lookup(topic, 0)
		if !ok || o.Err != nil || o.Offset != want {
			t.Errorf("%s: offset %d (err %v, found %v), want %d", what, o.Offset, o.Err, ok, want)
		}
	}
	lo, err := adm.ListStartOffsets(ctx, topic)
	check("start (-2)", lo, err, 0)
	lo, err = adm.ListEndOffsets(ctx, topic)
	check("end (-1)", lo, err, 5)
	lo, err = adm.ListOffsetsAfterMilli(ctx, 0, topic)
	check("after epoch 0", lo, err, 0)
	lo, err = adm.ListOffsetsAfterMilli(ctx, mid, topic)
	check("after the gap between the two produces", lo, err, 3)

	// Past the end: the wire answer is offset -1, error 0 (kadm turns that
	// into the end offset, so ask with kmsg).
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition = 0
	rp.Timestamp = late
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, newKgo(t, tg.bootstrap))
	if err != nil {
		t.Fatalf("ListOffsets: %v", err)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.Offset != -1 {
		t.Errorf("ListOffsets past the end: error %d offset %d, want 0 / -1", p.ErrorCode, p.Offset)
	}
	// A timestamp query against a topic that is not there, sent straight to
	// a broker (kgo's own router would refuse it before the wire).
	rt.Topic = uniq("lo-missing")
	req.Topics = []kmsg.ListOffsetsRequestTopic{rt}
	cl := newKgo(t, tg.bootstrap)
	if raw, err := cl.SeedBrokers()[0].Request(ctx, req); err != nil {
		t.Errorf("ListOffsets on a missing topic: %v", err)
	} else if resp := raw.(*kmsg.ListOffsetsResponse); len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 ||
		resp.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("ListOffsets on a missing topic: %+v, want UNKNOWN_TOPIC_OR_PARTITION", resp)
	}
}

// testMetadata: auto-create on first metadata at the default width, `__`
// names never listed, never created and refused by name, and auto-create
// off when the v4+ flag says so.
func testMetadata(t *testing.T, tg target) {
	ctx := ctxT(t, 20*time.Second)
	cl := newKgo(t, tg.bootstrap)
	md := func(allow bool, topics ...string) *kmsg.MetadataResponse {
		t.Helper()
		req := metadataReq(topics...)
		req.AllowAutoTopicCreation = allow
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("metadata: %v", err)
		}
		return resp
	}
	off := uniq("md-noauto")
	if r := md(false, off); r.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("metadata allow_auto=false for a missing topic: error %d, want UNKNOWN_TOPIC_OR_PARTITION", r.Topics[0].ErrorCode)
	}
	if res := tg.dev.fetch(t, off, "0", 0); res.Error != "UNKNOWN_TOPIC_OR_PARTITION" {
		t.Errorf("allow_auto=false created the queue: %+v", res)
	}
	auto := uniq("md-auto")
	r := md(true, auto)
	if r.Topics[0].ErrorCode != 0 && r.Topics[0].ErrorCode != kerr.LeaderNotAvailable.Code {
		t.Fatalf("auto-create: error %d", r.Topics[0].ErrorCode)
	}
	var width int
	eventually(t, 5*time.Second, "auto-created topic with partitions", func() (bool, string) {
		r := md(true, auto)
		width = len(r.Topics[0].Partitions)
		return r.Topics[0].ErrorCode == 0 && width > 0, fmt.Sprintf("error %d, %d partitions", r.Topics[0].ErrorCode, width)
	})
	if width != testWidth {
		t.Errorf("auto-created %s with %d partitions, want the default width %d", auto, width, testWidth)
	}
	for i, p := range md(true, auto).Topics[0].Partitions {
		if p.Partition != int32(i) || p.ErrorCode != 0 || len(p.Replicas) == 0 || len(p.ISR) == 0 || p.Replicas[0] != p.Leader {
			t.Errorf("partition %d of %s: %+v", i, auto, p)
		}
	}
	// Writing to the last partition must not narrow or widen anything.
	produceKgo(t, tg.bootstrap, auto, kgo.NoCompression(), []rec{{partition: int32(width - 1), offset: 0, value: []byte("edge")}})
	if n := len(md(true, auto).Topics[0].Partitions); n != width {
		t.Errorf("width moved from %d to %d after a produce", width, n)
	}

	internal := "__consumer_offsets"
	if r := md(true, internal); r.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("metadata for %s: error %d, want UNKNOWN_TOPIC_OR_PARTITION", internal, r.Topics[0].ErrorCode)
	}
	if res := tg.dev.fetch(t, internal, "0", 0); res.Error != "UNKNOWN_TOPIC_OR_PARTITION" {
		t.Errorf("metadata auto-created %s", internal)
	}
	all := md(true)
	for _, tp := range all.Topics {
		if tp.Topic != nil && len(*tp.Topic) >= 2 && (*tp.Topic)[:2] == "__" {
			t.Errorf("all-topics listing shows %s", *tp.Topic)
		}
	}
	if len(all.Brokers) == 0 {
		t.Errorf("metadata lists no brokers")
	}
}
