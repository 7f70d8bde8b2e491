package node

import (
	"context"
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/producer"
	"github.com/queen-mq/queen-kafka/queen/dev"
	"github.com/queen-mq/queen-kafka/recordbatch/batchtest"
	"github.com/queen-mq/queen-kafka/transport"
)

func idemBatch(t testing.TB, pid int64, epoch int16, seq int32, n int) []byte {
	recs := make([]kmsg.Record, n)
	for i := range recs {
		recs[i] = kmsg.Record{Key: []byte{byte(i)}, Value: []byte("v")}
	}
	return batchtest.Batch{Idem: true, PID: pid, Epoch: epoch, FirstSeq: seq, FirstTS: 1, Records: recs}.Encode(t)
}

// initProducer asks the node for a producer id (v4, no transactional id).
func (e *dataEnv) initProducer(c *transport.Conn, pid int64, epoch int16) *kmsg.InitProducerIDResponse {
	e.t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version, req.ProducerID, req.ProducerEpoch, req.TransactionTimeoutMillis = 4, pid, epoch, 60000
	resp, err := e.n.handleInitProducerID(context.Background(), c, req)
	require.NoError(e.t, err)
	return resp.(*kmsg.InitProducerIDResponse)
}

func (e *dataEnv) hwm(topic string, p int32) int64 {
	res, _ := e.stored(topic, p)
	return res.HighWatermark
}

func TestIdempotentRetryNotDuplicated(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, nil)
	e.createTopic("orders")
	ip := e.initProducer(e.c, -1, -1)
	require.Equal(t, int16(0), ip.ErrorCode)
	pid := ip.ProducerID

	require.Equal(t, int64(0), e.produce("orders", 0, idemBatch(t, pid, 0, 0, 3)).BaseOffset)
	require.Equal(t, int64(3), e.produce("orders", 0, idemBatch(t, pid, 0, 3, 2)).BaseOffset)
	// Both batches retried: answered with their first offsets, not written.
	p := e.produce("orders", 0, idemBatch(t, pid, 0, 0, 3))
	require.Equal(t, int16(0), p.ErrorCode)
	require.Equal(t, int64(0), p.BaseOffset)
	require.Equal(t, int64(3), e.produce("orders", 0, idemBatch(t, pid, 0, 3, 2)).BaseOffset)
	require.Equal(t, int64(5), e.hwm("orders", 0))

	// A gap is refused with nothing written.
	p = e.produce("orders", 0, idemBatch(t, pid, 0, 9, 1))
	require.Equal(t, kerr.OutOfOrderSequenceNumber.Code, p.ErrorCode)
	require.Equal(t, int64(5), e.hwm("orders", 0))
	require.Equal(t, int64(5), e.produce("orders", 0, idemBatch(t, pid, 0, 5, 1)).BaseOffset)

	// Another partition of the same producer starts at sequence 0.
	require.Equal(t, int64(0), e.produce("orders", 1, idemBatch(t, pid, 0, 0, 1)).BaseOffset)
}

// TestIdempotentWindowRemembersFiveBatches: the sixth batch back is no
// longer answerable from the window and is refused, not rewritten.
func TestIdempotentWindowRemembersFiveBatches(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, nil)
	e.createTopic("orders")
	pid := e.initProducer(e.c, -1, -1).ProducerID
	for i := int32(0); i < 6; i++ {
		require.Equal(t, int64(i), e.produce("orders", 0, idemBatch(t, pid, 0, i, 1)).BaseOffset)
	}
	require.Equal(t, int64(1), e.produce("orders", 0, idemBatch(t, pid, 0, 1, 1)).BaseOffset, "fifth back: remembered")
	require.Equal(t, kerr.OutOfOrderSequenceNumber.Code, e.produce("orders", 0, idemBatch(t, pid, 0, 0, 1)).ErrorCode, "sixth back: forgotten")
	require.Equal(t, int64(6), e.hwm("orders", 0))
}

// TestIdempotentUnknownProducerRecovers: a producer the facade never saw
// (here: the same broker after a facade restart) is accepted at any
// sequence, as Apache Kafka 3.9 accepts it (issue 9; this test pinned seed
// 001's refusal before): a retry of a batch Queen already stored is
// answered by Queen's dedup window with the original offsets and written
// once, the next sequence starts the window, and a gap on that now known
// window is refused. InitProducerId still answers a fresh id at epoch 0,
// as Kafka's coordinator does, whatever id and epoch it carries.
func TestIdempotentUnknownProducerRecovers(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, nil)
	e.createTopic("orders")
	pid := e.initProducer(e.c, -1, -1).ProducerID
	require.Equal(t, int64(0), e.produce("orders", 0, idemBatch(t, pid, 0, 0, 42)).BaseOffset)

	// Restart: a new node over the same Queen knows nothing.
	e.n = e.node(nil)
	e.c = testConn(t, e.n)
	obs := &recordingObserver{}
	e.n.obs = obs
	p := e.produce("orders", 0, idemBatch(t, pid, 0, 0, 42))
	require.Equal(t, int16(0), p.ErrorCode, "the retry of a batch whose answer the restart lost")
	require.Equal(t, int64(0), p.BaseOffset, "answered with the original offsets (Queen's dedup window)")
	require.Equal(t, int64(42), e.hwm("orders", 0), "and not stored again")
	require.Equal(t, [2]int{0, 0}, obs.produced, "nor counted as produced")
	p = e.produce("orders", 0, idemBatch(t, pid, 0, 42, 1))
	require.Equal(t, int16(0), p.ErrorCode)
	require.Equal(t, int64(42), p.BaseOffset)
	require.Equal(t, kerr.OutOfOrderSequenceNumber.Code, e.produce("orders", 0, idemBatch(t, pid, 0, 44, 1)).ErrorCode, "a gap on the known window")
	require.Equal(t, int64(43), e.hwm("orders", 0), "nothing of the gap written")

	// On another partition, a producer met mid-stream starts its window there.
	p = e.produce("orders", 1, idemBatch(t, pid, 0, 1000, 2))
	require.Equal(t, int16(0), p.ErrorCode)
	require.Equal(t, int64(0), p.BaseOffset)

	fresh := e.initProducer(e.c, pid, 0)
	require.Equal(t, int16(0), fresh.ErrorCode)
	require.NotEqual(t, pid, fresh.ProducerID, "a fresh id, not a bump of the one named")
	require.Equal(t, int16(0), fresh.ProducerEpoch)
	require.Equal(t, int64(43), e.produce("orders", 0, idemBatch(t, fresh.ProducerID, 0, 0, 1)).BaseOffset)
	require.Equal(t, int64(44), e.produce("orders", 0, idemBatch(t, fresh.ProducerID, 0, 1, 1)).BaseOffset)
	require.Equal(t, int64(45), e.hwm("orders", 0))

	// An exhausted epoch gets a new id too.
	last := e.initProducer(e.c, 77, math.MaxInt16-1)
	require.Equal(t, int16(0), last.ErrorCode)
	require.NotEqual(t, int64(77), last.ProducerID)
	require.Equal(t, int16(0), last.ProducerEpoch)

	// Java's idempotent producer bumps its epoch locally and starts at 0.
	p = e.produce("orders", 1, idemBatch(t, pid, 5, 0, 1))
	require.Equal(t, int16(0), p.ErrorCode)
	require.Equal(t, int64(2), p.BaseOffset)
	require.Equal(t, kerr.InvalidProducerEpoch.Code, e.produce("orders", 0, idemBatch(t, pid, 2, 0, 1)).ErrorCode, "and the local bump fences the older epoch")
}

// TestInitProducerIDCannotFenceAnotherProducer: a client naming another
// client's producer id and epoch in a non-transactional InitProducerId gets
// an id of its own; the named producer's epoch does not move, so its next
// batch is written.
func TestInitProducerIDCannotFenceAnotherProducer(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, nil)
	e.createTopic("orders")
	victim := e.initProducer(e.c, -1, -1)
	require.Equal(t, int64(0), e.produce("orders", 0, idemBatch(t, victim.ProducerID, 0, 0, 1)).BaseOffset)

	for _, known := range []bool{true, false} {
		other := testConn(t, e.n)
		named := victim.ProducerID
		if !known {
			named = victim.ProducerID + 500 // an id of this node's block it never handed out
		}
		got := e.initProducer(other, named, 0)
		require.Equal(t, int16(0), got.ErrorCode)
		require.NotEqual(t, named, got.ProducerID, "known %v: answered a fresh id", known)
		require.Equal(t, int16(0), got.ProducerEpoch, "known %v", known)
	}
	ps := e.producerState(victim.ProducerID)
	require.NotNil(t, ps)
	require.Equal(t, int16(0), ps.epoch, "the victim's epoch did not move")
	p := e.produce("orders", 0, idemBatch(t, victim.ProducerID, 0, 1, 1))
	require.Equal(t, int16(0), p.ErrorCode, "the victim is not fenced")
	require.Equal(t, int64(1), p.BaseOffset)
}

// TestIdempotentConcurrentRetry: an original and its retry racing on two
// connections are sequenced one after the other: one write, one offset.
func TestIdempotentConcurrentRetry(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, nil)
	e.createTopic("orders")
	pid := e.initProducer(e.c, -1, -1).ProducerID
	batch := idemBatch(t, pid, 0, 0, 10)
	conns := []*transport.Conn{e.c, testConn(t, e.n), testConn(t, e.n), testConn(t, e.n)}
	var wg sync.WaitGroup
	bases := make([]int64, len(conns))
	codes := make([]int16, len(conns))
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := e.n.handleProduce(context.Background(), c, produceReq(9, -1, "orders", 0, batch))
			if err == nil {
				p := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
				bases[i], codes[i] = p.BaseOffset, p.ErrorCode
			}
		}()
	}
	wg.Wait()
	for i := range conns {
		require.Equal(t, int16(0), codes[i])
		require.Equal(t, int64(0), bases[i])
	}
	require.Equal(t, int64(10), e.hwm("orders", 0))
}

// A transactional id is claimed in single mode: a fresh producer id from
// the same allocator as idempotent ones, at epoch 0.
func TestInitProducerIDTransactionalClaimed(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, nil)
	idem := e.initProducer(e.c, -1, -1)
	req := kmsg.NewPtrInitProducerIDRequest()
	id := "txn-1"
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.TransactionTimeoutMillis = 4, &id, -1, -1, 60000
	resp, err := e.n.handleInitProducerID(context.Background(), e.c, req)
	require.NoError(t, err)
	r := resp.(*kmsg.InitProducerIDResponse)
	require.Equal(t, int16(0), r.ErrorCode)
	require.Equal(t, int16(0), r.ProducerEpoch)
	require.NotEqual(t, idem.ProducerID, r.ProducerID, "one allocator for both kinds")
}

// TestProducerIDsUniqueAcrossNodesAndRestarts: three nodes allocating at
// once over one Queen, then a restarted one, never hand out an id twice.
func TestProducerIDsUniqueAcrossNodesAndRestarts(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, nil)
	nodes := []*Node{e.n, e.node(nil), e.node(nil)}
	seen := make(map[int64]bool)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, n := range nodes {
		c := testConn(t, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < producer.IDBlock+5; i++ {
				req := kmsg.NewPtrInitProducerIDRequest()
				req.Version, req.ProducerID, req.ProducerEpoch = 4, -1, -1
				resp, err := n.handleInitProducerID(context.Background(), c, req)
				if err != nil {
					t.Error(err)
					return
				}
				r := resp.(*kmsg.InitProducerIDResponse)
				mu.Lock()
				if r.ErrorCode != 0 || seen[r.ProducerID] {
					t.Errorf("code %d, id %d repeated=%v", r.ErrorCode, r.ProducerID, seen[r.ProducerID])
				}
				seen[r.ProducerID] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	e.n = e.node(nil) // a restart
	r := e.initProducer(testConn(t, e.n), -1, -1)
	require.False(t, seen[r.ProducerID], "a restart abandons its block, never reuses it")
	require.GreaterOrEqual(t, r.ProducerID, int64(6*producer.IDBlock))
}

// TestProducerIDsFaults: a Queen failure is a retriable code (a 429 also
// throttles); 403 is CLUSTER_AUTHORIZATION_FAILED.
func TestProducerIDsFaults(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, nil)
	one := 1
	e.fault(map[string]any{"route": "kv", "status": 429, "retryAfter": one, "count": 1})
	r := e.initProducer(e.c, -1, -1)
	require.Equal(t, kerr.CoordinatorLoadInProgress.Code, r.ErrorCode)
	require.Equal(t, int32(1000), r.ThrottleMillis)
	e.fault(map[string]any{"route": "kv", "status": 403, "count": 1})
	require.Equal(t, kerr.ClusterAuthorizationFailed.Code, e.initProducer(e.c, -1, -1).ErrorCode)
	e.clearFaults()
	require.Equal(t, int16(0), e.initProducer(e.c, -1, -1).ErrorCode)
}
