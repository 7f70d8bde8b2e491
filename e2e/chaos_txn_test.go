//go:build chaos

package e2e

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The transactional chaos test (issue 23, item 3), behind the build tag
// chaos: `make chaos-txn-short` (in `make test`) with the defaults,
// `make chaos-txn` at length. On a three-node cluster, consume-transform-
// produce workers copy uniquely valued records from an input topic to an
// output topic, each batch in one transaction with its input offsets:
// two franz-go workers (GroupTransactSession) in one group, two librdkafka
// workers in another, each group with its own output topic. Worker k1
// reaches the cluster through a frame proxy that can hold one EndTxn.
// A seeded nemesis SIGKILLs facade nodes (restarting them), SIGKILLs and
// restarts queen-dev, restarts clients mid-transaction, and holds k1's
// next EndTxn past its client's request timeout, so that the client
// retries on a new connection and moves on to its next transaction, then
// releases it to the facade late. The checker (chaos_txn_check_test.go)
// then counts Jepsen's classes over everything read back read_committed.
//
// The environment shapes a run (chaosEnv's variables, plus):
//
//	CHAOS_DELAYS          EndTxns held past the client's timeout (default 4)
//	CHAOS_CLIENT_RESTARTS workers closed mid-transaction and restarted (default 2)

const (
	txnParts = 4
	// txnClientTimeout is k1's request timeout (franz-go's overhead, the
	// whole deadline of a request without a timeout field such as EndTxn).
	txnClientTimeout = 1500 * time.Millisecond
)

// txnHistory is every worker's transactions and polls.
type txnHistory struct {
	mu    sync.Mutex
	txns  []*txnRec
	polls []txnPoll
	errs  map[string]int
}

func (h *txnHistory) begin(tag string) *txnRec {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := &txnRec{tag: tag}
	h.txns = append(h.txns, r)
	return r
}

func (h *txnHistory) end(r *txnRec, o txnOutcome) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r.outcome = o
}

func (h *txnHistory) poll(p txnPoll) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.polls = append(h.polls, p)
}

func (h *txnHistory) err(what string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.errs == nil {
		h.errs = map[string]int{}
	}
	h.errs[what]++
}

// of is the history of the workers whose names start with prefix.
func (h *txnHistory) of(prefix string) ([]txnRec, []txnPoll) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var ts []txnRec
	for _, r := range h.txns {
		if strings.HasPrefix(r.tag, prefix) {
			ts = append(ts, txnRec{r.tag, slices.Clone(r.values), r.outcome})
		}
	}
	var ps []txnPoll
	for _, p := range h.polls {
		if strings.HasPrefix(p.worker, prefix) {
			ps = append(ps, p)
		}
	}
	return ts, ps
}

// txnWorker is one consume-transform-produce worker.
type txnWorker struct {
	name                 string
	seeds                []string
	in, out, group, txID string
	h                    *txnHistory
	restart              chan struct{}                                           // the nemesis asks for a restart mid-transaction
	dial                 func(context.Context, string, string) (net.Conn, error) // nil: direct
	seqs                 atomic.Int64                                            // poll sequences begun
	txnSeq               atomic.Int64                                            // transactions begun
	producedSeq          atomic.Int64                                            // the last transaction a record was produced in
	restarts             atomic.Int64
	// midTxn, when set, is called in each transaction between its first
	// half of records (produced and acknowledged) and its second: where a
	// late EndTxn meets the transaction (endTxnDelayer.meet).
	midTxn func()
	// rdkLog, when set, is the file a librdkafka worker's consumer logs to
	// at debug level (cgrp, topic, fetch), every incarnation appended: what
	// names the cause of a reset position (rdkLogExcerpt).
	rdkLog string
}

func (w *txnWorker) tag(inc int, n int64) string { return fmt.Sprintf("%s.%d.%d", w.name, inc, n) }

// runKgo runs franz-go's worker until stop, a client incarnation at a time.
func (w *txnWorker) runKgo(stop <-chan struct{}, wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		for inc := 0; !closed(stop); inc++ {
			w.kgoIncarnation(inc, stop)
		}
	}()
}

func (w *txnWorker) kgoIncarnation(inc int, stop <-chan struct{}) {
	var seq atomic.Int64
	seq.Store(w.seqs.Add(1))
	rewound := func(context.Context, *kgo.Client, map[string][]int32) { seq.Store(w.seqs.Add(1)) }
	opts := []kgo.Opt{
		kgo.SeedBrokers(w.seeds...), kgo.TransactionalID(w.txID), kgo.TransactionTimeout(10 * time.Second),
		kgo.ConsumerGroup(w.group), kgo.ConsumeTopics(w.in), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.SessionTimeout(6 * time.Second), kgo.HeartbeatInterval(300 * time.Millisecond), kgo.RebalanceTimeout(5 * time.Second),
		kgo.FetchMaxWait(250 * time.Millisecond), kgo.MetadataMinAge(250 * time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }), kgo.RetryTimeout(30 * time.Second),
		kgo.OnPartitionsAssigned(rewound), kgo.OnPartitionsRevoked(rewound), kgo.OnPartitionsLost(rewound),
		kgo.ClientID(w.name),
	}
	if w.dial != nil {
		opts = append(opts, kgo.Dialer(w.dial), kgo.RequestTimeoutOverhead(txnClientTimeout))
	}
	sess, err := kgo.NewGroupTransactSession(opts...)
	if err != nil {
		w.h.err(w.name + " session")
		time.Sleep(time.Second)
		return
	}
	defer sess.Close()
	bg := context.Background()
	for !closed(stop) {
		ctx, cancel := context.WithTimeout(bg, time.Second)
		fs := sess.PollRecords(ctx, 40)
		cancel()
		if fs.IsClientClosed() {
			return
		}
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				w.h.err(w.name + " fetch: " + err.Error())
			}
		})
		if fs.NumRecords() == 0 {
			continue
		}
		s := int(seq.Load())
		fs.EachRecord(func(r *kgo.Record) { w.h.poll(txnPoll{w.name, s, r.Partition, r.Offset, time.Now()}) })
		if err := sess.Begin(); err != nil {
			w.h.err(w.name + " begin")
			return
		}
		n := w.txnSeq.Add(1)
		rec := w.h.begin(w.tag(inc, n))
		recs := fs.Records()
		for i, r := range recs {
			if i == (len(recs)+1)/2 && w.midTxn != nil {
				fctx, fcancel := context.WithTimeout(bg, 10*time.Second)
				_ = sess.Client().Flush(fctx)
				fcancel()
				w.midTxn()
			}
			rec.values = append(rec.values, string(r.Value))
			out := &kgo.Record{Topic: w.out, Partition: r.Partition, Value: []byte(txnOutValue(string(r.Value), rec.tag))}
			sess.Produce(bg, out, func(_ *kgo.Record, err error) {
				if err != nil {
					w.h.err(w.name + " produce")
					return
				}
				w.producedSeq.Store(n)
			})
		}
		select {
		case <-w.restart:
			// Mid-transaction: the records reach the facade, the
			// transaction never ends; the next incarnation fences it.
			fctx, fcancel := context.WithTimeout(bg, 5*time.Second)
			_ = sess.Client().Flush(fctx)
			fcancel()
			w.restarts.Add(1)
			return
		default:
		}
		ctx, cancel = context.WithTimeout(bg, 45*time.Second)
		committed, err := sess.End(ctx, kgo.TryCommit)
		cancel()
		switch {
		case err != nil:
			w.h.end(rec, txnUnknown)
			w.h.err(w.name + " end")
			return // a new incarnation fences whatever is left
		case committed:
			w.h.end(rec, txnCommitted)
		default:
			w.h.end(rec, txnAborted)
			seq.Store(w.seqs.Add(1)) // the session rewinds to the committed offsets
		}
	}
}

// runRdk runs librdkafka's worker until stop, a client incarnation at a
// time, in the pattern librdkafka documents (as runRdkafkaEOSWorker).
func (w *txnWorker) runRdk(t *testing.T, stop <-chan struct{}, wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		for inc := 0; !closed(stop); inc++ {
			w.rdkIncarnation(t, inc, stop)
		}
	}()
}

func (w *txnWorker) rdkIncarnation(t *testing.T, inc int, stop <-chan struct{}) {
	var seq atomic.Int64
	seq.Store(w.seqs.Add(1))
	cfg := &kafka.ConfigMap{
		"bootstrap.servers": strings.Join(w.seeds, ","), "group.id": w.group, "auto.offset.reset": "earliest",
		"enable.auto.commit": false, "isolation.level": "read_committed", "client.id": w.name,
		"session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
		"reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 500, "log_level": 2,
	}
	if w.rdkLog != "" {
		_ = cfg.SetKey("debug", "cgrp,topic,fetch")
		_ = cfg.SetKey("log_level", 7)
		_ = cfg.SetKey("go.logs.channel.enable", true)
	}
	c, err := kafka.NewConsumer(cfg)
	if err != nil {
		w.h.err(w.name + " consumer")
		time.Sleep(time.Second)
		return
	}
	defer c.Close()
	if w.rdkLog != "" {
		go w.keepRdkLog(inc, c.Logs())
	}
	if err := c.SubscribeTopics([]string{w.in}, func(*kafka.Consumer, kafka.Event) error {
		seq.Store(w.seqs.Add(1))
		return nil
	}); err != nil {
		w.h.err(w.name + " subscribe")
		return
	}
	p, err := kafka.NewProducer(&kafka.ConfigMap{
		"bootstrap.servers": strings.Join(w.seeds, ","), "transactional.id": w.txID, "transaction.timeout.ms": 10000,
		"client.id": w.name, "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 500,
		"retry.backoff.ms": 50, "retry.backoff.max.ms": 500, "log_level": 2,
	})
	if err != nil {
		w.h.err(w.name + " producer")
		return
	}
	defer p.Close()
	go func() {
		for e := range p.Events() {
			if m, ok := e.(*kafka.Message); ok && m.TopicPartition.Error != nil {
				w.h.err(w.name + " produce")
			}
		}
	}()
	bg := context.Background()
	// retry runs call until it succeeds, fails with an error that is not
	// retriable, or two minutes pass.
	retry := func(call func(context.Context) error) error {
		for deadline := time.Now().Add(2 * time.Minute); ; {
			ctx, cancel := context.WithTimeout(bg, 20*time.Second)
			err := call(ctx)
			cancel()
			ke, ok := err.(kafka.Error)
			if err == nil || !ok || !(ke.IsRetriable() || ke.Code() == kafka.ErrTimedOut) || time.Now().After(deadline) {
				return err
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if err := retry(p.InitTransactions); err != nil {
		w.h.err(w.name + " init")
		return
	}
	for !closed(stop) {
		var batch []*kafka.Message
		s := seq.Load()
		for deadline := time.Now().Add(500 * time.Millisecond); len(batch) < 40 && time.Now().Before(deadline); {
			m, err := c.ReadMessage(100 * time.Millisecond)
			if now := seq.Load(); now != s {
				// A rebalance ran in ReadMessage: what was read before it
				// belongs to the old assignment and is read again.
				batch, s = batch[:0], now
			}
			if err != nil {
				if ke, ok := err.(kafka.Error); ok && ke.IsFatal() {
					w.h.err(w.name + " consume fatal")
					return
				}
				continue
			}
			w.h.poll(txnPoll{w.name, int(s), m.TopicPartition.Partition, int64(m.TopicPartition.Offset), time.Now()})
			batch = append(batch, m)
		}
		if len(batch) == 0 {
			continue
		}
		if err := p.BeginTransaction(); err != nil {
			w.h.err(w.name + " begin")
			return
		}
		n := w.txnSeq.Add(1)
		rec := w.h.begin(w.tag(inc, n))
		err := func() error {
			next := map[int32]kafka.TopicPartition{}
			for _, m := range batch {
				tp := m.TopicPartition
				v := txnOutValue(string(m.Value), rec.tag)
				rec.values = append(rec.values, string(m.Value))
				if err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &w.out, Partition: tp.Partition}, Value: []byte(v)}, nil); err != nil {
					return err
				}
				tp.Offset++
				next[tp.Partition] = tp
			}
			w.producedSeq.Store(n)
			select {
			case <-w.restart:
				p.Flush(5000)
				return errRestart
			default:
			}
			var offsets []kafka.TopicPartition
			for _, tp := range next {
				offsets = append(offsets, tp)
			}
			md, err := c.GetConsumerGroupMetadata()
			if err != nil {
				return err
			}
			if err := retry(func(ctx context.Context) error { return p.SendOffsetsToTransaction(ctx, offsets, md) }); err != nil {
				return err
			}
			return retry(p.CommitTransaction)
		}()
		if errors.Is(err, errRestart) {
			w.restarts.Add(1)
			return
		}
		if err == nil {
			w.h.end(rec, txnCommitted)
			continue
		}
		ke, ok := err.(kafka.Error)
		if !ok || !ke.TxnRequiresAbort() {
			// Fenced, fatal, or a commit with no answer: either outcome.
			w.h.end(rec, txnUnknown)
			w.h.err(w.name + " end")
			return
		}
		if err := retry(p.AbortTransaction); err != nil {
			w.h.end(rec, txnUnknown)
			w.h.err(w.name + " abort")
			return
		}
		w.h.end(rec, txnAborted)
		seq.Store(w.seqs.Add(1))
		if err := retry(func(context.Context) error { return rewindToCommitted(c) }); err != nil {
			w.h.err(w.name + " rewind")
			return
		}
	}
}

var errRestart = errors.New("restart")

// keepRdkLog appends what librdkafka logs to w.rdkLog until logs closes
// (the consumer's Close).
func (w *txnWorker) keepRdkLog(inc int, logs <-chan kafka.LogEvent) {
	f, err := os.OpenFile(w.rdkLog, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		for range logs {
		}
		return
	}
	defer f.Close()
	bw := bufio.NewWriter(f)
	defer bw.Flush()
	for e := range logs {
		fmt.Fprintf(bw, "%s inc%d %d %s %s\n", e.Timestamp.Format("15:04:05.000"), inc, e.Level, e.Tag, e.Message)
	}
}

// rdkResetLine matches what librdkafka logs when a position moves other
// than forward: an offset reset (a fetch answered OFFSET_OUT_OF_RANGE, a
// committed offset answered absent, log truncation) and a seek.
var rdkResetLine = regexp.MustCompile(`(?i)offset reset|out of range|truncat|seek`)

// rdkLogExcerpt is the lines of a worker's librdkafka log that name why a
// position moved (rdkResetLine), at most max (the first and the last
// halves), and how many matched.
func rdkLogExcerpt(path string, max int) ([]string, int) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0
	}
	defer f.Close()
	var head, tail []string
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if !rdkResetLine.MatchString(sc.Text()) {
			continue
		}
		n++
		if len(head) < max/2 {
			head = append(head, sc.Text())
			continue
		}
		if tail = append(tail, sc.Text()); len(tail) > max-max/2 {
			tail = tail[1:]
		}
	}
	if n > len(head)+len(tail) {
		head = append(head, fmt.Sprintf("... %d more ...", n-len(head)-len(tail)))
	}
	return append(head, tail...), n
}

// endTxnDelayer holds the next EndTxn request frame on a proxied
// connection once armed: at least txnClientTimeout plus a margin, so the
// client has given up on the connection and retried on another, and then
// until the worker has produced in a later transaction (at most maxHold),
// so the late frame meets that transaction; then forwards it to the facade.
// A worker whose midTxn is meet waits there for the late frame's answer,
// so the frame lands between the two halves of a transaction.
type endTxnDelayer struct {
	t        testing.TB
	w        *txnWorker
	armed    atomic.Bool
	holding  atomic.Bool // a frame is held, or forwarded and not yet answered
	maxHold  time.Duration
	held     atomic.Int64 // forwarded late
	answered atomic.Int64 // of them, answered by the facade
	mu       sync.Mutex
	codes    map[int16]int // the late frames' answers, by error code
}

const apiKeyEndTxn = 26

func (d *endTxnDelayer) codesSeen() map[int16]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return maps.Clone(d.codes)
}

// meet waits (at most 5 s) until no late frame is in flight.
func (d *endTxnDelayer) meet() {
	for deadline := time.Now().Add(5 * time.Second); d.holding.Load() && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
}

func (d *endTxnDelayer) hooks() frameHooks {
	var mu sync.Mutex
	late := map[int32]uint16{} // correlation id → request version
	return frameHooks{
		linger: 15 * time.Second,
		request: func(f []byte) bool {
			// size(4) api_key(2) api_version(2) correlation_id(4)
			if len(f) < 12 || binary.BigEndian.Uint16(f[4:6]) != apiKeyEndTxn || !d.armed.CompareAndSwap(true, false) {
				return true
			}
			d.holding.Store(true)
			version, corr := binary.BigEndian.Uint16(f[6:8]), int32(binary.BigEndian.Uint32(f[8:12]))
			at, start := d.w.txnSeq.Load(), time.Now()
			for time.Since(start) < txnClientTimeout+500*time.Millisecond ||
				(d.w.producedSeq.Load() <= at && time.Since(start) < d.maxHold) {
				time.Sleep(5 * time.Millisecond)
			}
			mu.Lock()
			late[corr] = version
			mu.Unlock()
			d.held.Add(1)
			d.t.Logf("chaos-txn: EndTxn v%d of %s (transaction %d) held %v, released in transaction %d",
				version, d.w.name, at, time.Since(start).Round(time.Millisecond), d.w.txnSeq.Load())
			return true
		},
		answer: func(f []byte) bool {
			if len(f) < 8 {
				return true
			}
			corr := int32(binary.BigEndian.Uint32(f[4:8]))
			mu.Lock()
			version, ok := late[corr]
			delete(late, corr)
			mu.Unlock()
			if !ok {
				return true
			}
			// The answer: correlation id, (v3+: an empty tag buffer),
			// throttle_time_ms(4), error_code(2).
			at := 12
			if version >= 3 {
				at++
			}
			code := int16(-2)
			if len(f) >= at+2 {
				code = int16(binary.BigEndian.Uint16(f[at : at+2]))
			}
			d.mu.Lock()
			if d.codes == nil {
				d.codes = map[int16]int{}
			}
			d.codes[code]++
			d.mu.Unlock()
			d.answered.Add(1)
			d.holding.Store(false)
			return true
		},
	}
}

// proxiedDialer puts a frame proxy with d's hooks in front of every
// address of addrs and dials through it.
func proxiedDialer(t testing.TB, addrs []string, d *endTxnDelayer) func(context.Context, string, string) (net.Conn, error) {
	via := map[string]string{}
	for _, a := range addrs {
		via[a] = startFrameProxy(t, a, d.hooks)
	}
	return func(ctx context.Context, network, host string) (net.Conn, error) {
		if p, ok := via[host]; ok {
			host = p
		}
		var nd net.Dialer
		return nd.DialContext(ctx, network, host)
	}
}

// produceTxnInput produces unique values to topic with an idempotent
// franz-go producer, about rate a second, until stop.
func produceTxnInput(t *testing.T, seeds []string, topic string, rate int, stop <-chan struct{}, wg *sync.WaitGroup, h *txnHistory) {
	cl := newChaosProducer(t, seeds, topic)
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; {
			select {
			case <-stop:
				_ = cl.Flush(context.Background())
				return
			case <-tick.C:
			}
			for range max(rate/10, 1) {
				cl.Produce(context.Background(), &kgo.Record{Partition: int32(i % txnParts), Value: []byte("in-" + strconv.Itoa(i))}, func(_ *kgo.Record, err error) {
					if err != nil {
						h.err("input produce")
					}
				})
				i++
			}
		}
	}()
}

func envCount(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a count", name, v)
	}
	return n
}

// TestChaosTxn: see the top of the file. Every class of the checker must
// be 0; the seed, the transactions checked, the delayed EndTxns and the
// faults are logged.
func TestChaosTxn(t *testing.T) {
	cfg := chaosEnv(t)
	delays, restarts := envCount(t, "CHAOS_DELAYS", 4), envCount(t, "CHAOS_CLIENT_RESTARTS", 2)
	t.Logf("chaos-txn: seed %d (CHAOS_SEED=%d repeats the nemesis), %d facade kills, %d queen-dev restarts, %d client restarts, %d delayed EndTxns over %v",
		cfg.seed, cfg.seed, cfg.kills, cfg.queenRestarts, restarts, delays, cfg.phase)
	rng := rand.New(rand.NewPCG(cfg.seed, cfg.seed^0x9e3779b97f4a7c15))
	start := time.Now()

	c := newTestCluster(t, clusterOpts{nodes: 3})
	in := uniq("txn-in")
	c.createTopic(t, in, txnParts)
	seeds := c.addrs()
	h := &txnHistory{}
	pipes := []struct{ prefix, out, group string }{{"k", uniq("txn-out-k"), uniq("g-txn-k")}, {"r", uniq("txn-out-r"), uniq("g-txn-r")}}
	for _, p := range pipes {
		c.createTopic(t, p.out, txnParts)
	}
	// librdkafka's own log of each r worker, kept when the test fails.
	logDir, err := os.MkdirTemp("", "chaos-txn-rdk-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("chaos-txn: librdkafka's logs of the r workers are kept in %s", logDir)
			return
		}
		os.RemoveAll(logDir)
	})
	var workers []*txnWorker
	for _, name := range []string{"k1", "k2", "r1", "r2"} {
		p := pipes[0]
		w := &txnWorker{name: name, seeds: seeds, in: in, group: p.group, txID: uniq("tx-" + name), h: h, restart: make(chan struct{}, 1)}
		if name[0] == 'r' {
			p = pipes[1]
			w.group, w.rdkLog = p.group, filepath.Join(logDir, name+".log")
		}
		w.out = p.out
		workers = append(workers, w)
	}
	d := &endTxnDelayer{t: t, w: workers[0], maxHold: 6 * time.Second}
	workers[0].dial, workers[0].midTxn = proxiedDialer(t, seeds, d), d.meet

	stopInput, stopWorkers := make(chan struct{}), make(chan struct{})
	var inputWG, workerWG sync.WaitGroup
	produceTxnInput(t, seeds, in, 200, stopInput, &inputWG, h)
	for _, w := range workers {
		if w.name[0] == 'k' {
			w.runKgo(stopWorkers, &workerWG)
		} else {
			w.runRdk(t, stopWorkers, &workerWG)
		}
	}
	// Make sure the workers are done before the cluster is killed, even if
	// the test fails first (the cleanups run in reverse order).
	closeInput := sync.OnceFunc(func() { close(stopInput) })
	closeWorkers := sync.OnceFunc(func() { close(stopWorkers) })
	t.Cleanup(func() {
		closeInput()
		closeWorkers()
		inputWG.Wait()
		workerWG.Wait()
	})

	// The delays: one armed per slot of the phase, at a random point of
	// its first half.
	var delayWG sync.WaitGroup
	delayWG.Add(1)
	phaseStart := time.Now()
	delayAt := make([]time.Duration, delays)
	for i := range delayAt {
		slot := cfg.phase / time.Duration(delays)
		delayAt[i] = time.Duration(i)*slot + time.Duration(rng.Int64N(int64(slot/2)+1))
	}
	go func() {
		defer delayWG.Done()
		for _, at := range delayAt {
			time.Sleep(time.Until(phaseStart.Add(at)))
			d.armed.Store(true)
		}
	}()

	// The faults shuffled, one per slot, as TestChaos: 0 a facade kill,
	// 1 a queen-dev restart, 2 a client restart.
	var faults []int
	for range cfg.kills {
		faults = append(faults, 0)
	}
	for range cfg.queenRestarts {
		faults = append(faults, 1)
	}
	for range restarts {
		faults = append(faults, 2)
	}
	rng.Shuffle(len(faults), func(i, j int) { faults[i], faults[j] = faults[j], faults[i] })
	slot := cfg.phase / time.Duration(max(len(faults), 1))
	for i, f := range faults {
		at := time.Duration(i)*slot + time.Duration(rng.Int64N(int64(slot/2)+1))
		time.Sleep(time.Until(phaseStart.Add(at)))
		down := 200*time.Millisecond + time.Duration(rng.Int64N(int64(3800*time.Millisecond)))
		switch f {
		case 1:
			t.Logf("chaos-txn %.1fs: SIGKILL queen-dev, restart after %v", time.Since(start).Seconds(), down.Round(time.Millisecond))
			c.dev.kill()
			time.Sleep(down)
			if err := c.dev.restart(); err != nil {
				t.Fatalf("restart queen-dev: %v\n%s", err, c.dev.Out.From(0))
			}
		case 0:
			id := 1 + rng.IntN(len(c.nodes))
			t.Logf("chaos-txn %.1fs: SIGKILL node %d, restart after %v", time.Since(start).Seconds(), id, down.Round(time.Millisecond))
			c.node(id).kill()
			time.Sleep(down)
			if err := c.node(id).restart(); err != nil {
				t.Fatalf("restart node %d: %v\n%s", id, err, c.node(id).Out.From(0))
			}
		case 2:
			w := workers[rng.IntN(len(workers))]
			t.Logf("chaos-txn %.1fs: restart worker %s mid-transaction", time.Since(start).Seconds(), w.name)
			select {
			case w.restart <- struct{}{}:
			default:
			}
		}
	}
	time.Sleep(time.Until(phaseStart.Add(cfg.phase)))
	delayWG.Wait()
	d.armed.Store(false)

	// Drain: the input stops, the workers copy what is left until both
	// groups have committed the input's end (at most 40 s), then stop.
	closeInput()
	inputWG.Wait()
	ends := endOffsets(t, seeds, in)
	drained := false
	for deadline := time.Now().Add(40 * time.Second); !drained && time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		drained = true
		for _, p := range pipes {
			got, err := c.offsetsAt(t, 1, p.group, in, txnParts)
			for part, end := range ends {
				drained = drained && err == nil && got[part] == end
			}
		}
	}
	closeWorkers()
	workerWG.Wait()
	t.Logf("chaos-txn %.1fs: workers stopped, input drained by both groups: %v", time.Since(start).Seconds(), drained)

	input := readToEnd(t, seeds, in, kgo.ReadCommitted())
	var total txnReport
	for _, p := range pipes {
		output := readToEnd(t, seeds, p.out, kgo.ReadCommitted())
		var committed map[int32]int64
		var err error
		for range 20 {
			if committed, err = c.offsetsAt(t, 1+rng.IntN(len(c.nodes)), p.group, in, txnParts); err == nil {
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("committed offsets of %s: %v", p.group, err)
		}
		txns, polls := h.of(p.prefix)
		r := checkTxns(input, output, committed, txns, polls)
		t.Logf("chaos-txn: pipeline %s (%d input, %d output records, committed %v): %v", p.prefix, len(input), len(output), committed, r)
		for _, dt := range r.details {
			t.Errorf("pipeline %s: %s", p.prefix, dt)
		}
		if r.failures() > 0 {
			for _, w := range workers {
				if w.rdkLog == "" || !strings.HasPrefix(w.name, p.prefix) {
					continue
				}
				lines, n := rdkLogExcerpt(w.rdkLog, 40)
				t.Logf("chaos-txn: worker %s, librdkafka's lines on positions (%d of %d; all in %s):\n%s", w.name, len(lines), n, w.rdkLog, strings.Join(lines, "\n"))
			}
		}
		total.txns += r.txns
		total.committed += r.committed
		total.aborted += r.aborted
		total.unfinished += r.unfinished
		total.unknown += r.unknown
		total.lost += r.lost
		total.abortedRead += r.abortedRead
		total.torn += r.torn
		total.duplicate += r.duplicate
		total.offsets += r.offsets
		total.nonmonotonic += r.nonmonotonic
		total.phantom += r.phantom
	}
	var restarted int64
	for _, w := range workers {
		restarted += w.restarts.Load()
	}
	h.mu.Lock()
	errs := fmt.Sprint(h.errs)
	h.mu.Unlock()
	verdict := fmt.Sprintf("chaos-txn: seed %d, %.1fs: %v; %d EndTxns delayed past the client's %v timeout (%d answered late by the facade, error codes %v), %d facade kills, %d queen-dev restarts, %d client restarts; client errors %s",
		cfg.seed, time.Since(start).Seconds(), total, d.held.Load(), txnClientTimeout, d.answered.Load(), d.codesSeen(), cfg.kills, cfg.queenRestarts, restarted, errs)
	if total.failures() > 0 {
		t.Error(verdict)
	} else {
		t.Log(verdict)
	}
	if total.committed == 0 {
		t.Errorf("seed %d: no transaction committed", cfg.seed)
	}
}

// TestChaosTxnLateEndTxn is the delayed-EndTxn case made deterministic:
// franz-go's EndTxn(commit) of transaction N is held past the client's
// timeout (the client commits N on a new connection), until transaction
// N+1 has produced its first record; then it is released to the facade,
// N+1 produces its second record and commits. A late EndTxn must never
// touch the next transaction: N+1 is visible whole or not at all, and not
// at all only if its commit was refused.
func TestChaosTxnLateEndTxn(t *testing.T) {
	c := newTestCluster(t, clusterOpts{nodes: 1})
	out := uniq("txn-late")
	c.createTopic(t, out, 1)
	w := &txnWorker{name: "late"}
	d := &endTxnDelayer{t: t, w: w, maxHold: 15 * time.Second}
	cl := newKgo(t, c.addrs(), kgo.TransactionalID(uniq("tx-late")), kgo.TransactionTimeout(60*time.Second),
		kgo.DefaultProduceTopic(out), kgo.Dialer(proxiedDialer(t, c.addrs(), d)), kgo.RequestTimeoutOverhead(txnClientTimeout),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }), kgo.RetryTimeout(5*time.Second))
	ctx := ctxT(t, time.Minute)
	h := &txnHistory{}
	var rec *txnRec
	begin := func() {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatalf("begin: %v", err)
		}
		rec = h.begin(w.tag(0, w.txnSeq.Add(1)))
	}
	produce := func(value string) {
		t.Helper()
		rec.values = append(rec.values, value)
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(txnOutValue(value, rec.tag))}).FirstErr(); err != nil {
			t.Logf("produce %s in %s: %v", value, rec.tag, err)
			return
		}
		w.producedSeq.Store(w.txnSeq.Load())
	}
	end := func(commit kgo.TransactionEndTry) {
		t.Helper()
		switch err := cl.EndTransaction(ctx, commit); {
		case err != nil:
			t.Logf("EndTxn(commit %v) of %s: %v", commit, rec.tag, err)
			h.end(rec, txnUnknown)
		case commit == kgo.TryCommit:
			h.end(rec, txnCommitted)
		default:
			h.end(rec, txnAborted)
		}
	}
	begin()
	produce("n")
	d.armed.Store(true)
	end(kgo.TryCommit)
	if d.armed.Load() {
		t.Fatal("the commit of transaction 1 sent no EndTxn through the proxy")
	}
	begin()
	produce("n+1 a")
	eventually(t, 20*time.Second, "the late EndTxn answered", func() (bool, string) {
		return d.answered.Load() == 1, fmt.Sprintf("%d held, %d answered", d.held.Load(), d.answered.Load())
	})
	produce("n+1 b")
	end(kgo.TryCommit)
	if rec.outcome == txnUnknown {
		end(kgo.TryAbort)
	}
	txns, _ := h.of("")
	r := checkTxns(nil, readToEnd(t, c.addrs(), out, kgo.ReadCommitted()), nil, txns, nil)
	t.Logf("late EndTxn: %v", r)
	for _, dt := range r.details {
		t.Error(dt)
	}
	if r.committed == 0 {
		t.Errorf("no transaction committed: %v", r)
	}
}
