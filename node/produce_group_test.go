package node

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/producer"
	"github.com/queen-mq/queen-kafka/queen/dev"
	"github.com/queen-mq/queen-kafka/recordbatch"
	"github.com/queen-mq/queen-kafka/recordbatch/batchtest"
)

const routePushCall = "POST /api/v1/push"

// groupPart is one partition of a test produce request.
type groupPart struct {
	topic     string
	partition int32
	raw       []byte
}

func groupProduceReq(acks int16, parts ...groupPart) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, acks, 30000
	for _, p := range parts {
		i := len(req.Topics) - 1
		if i < 0 || req.Topics[i].Topic != p.topic {
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = p.topic
			req.Topics = append(req.Topics, rt)
			i++
		}
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p.partition, p.raw
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	return req
}

// groupEnv is a node over its own dev broker with topics a and b (width 4).
func groupEnv(t *testing.T) (*Node, *devQueen) {
	n, fq := newTestNode(t, nil)
	for _, topic := range []string{"a", "b"} {
		_, err := fq.q.Configure(context.Background(), topic, nil)
		require.NoError(t, err)
	}
	return n, fq
}

// answerQueued runs the connection's answer loop over reqs (runQueued).
func answerQueued(t *testing.T, n *Node, reqs []*kmsg.ProduceRequest) []*kmsg.ProduceResponse {
	t.Helper()
	in := make([]kmsg.Request, len(reqs))
	for i, r := range reqs {
		in[i] = r
	}
	out := make([]*kmsg.ProduceResponse, len(reqs))
	for i, resp := range runQueued(t, n, in) {
		if resp != nil {
			out[i] = resp.(*kmsg.ProduceResponse)
		}
	}
	return out
}

// answerSequential runs reqs one at a time, each dispatched alone.
func answerSequential(t *testing.T, n *Node, reqs []*kmsg.ProduceRequest) []*kmsg.ProduceResponse {
	t.Helper()
	c := testConn(t, n)
	out := make([]*kmsg.ProduceResponse, len(reqs))
	for i, req := range reqs {
		resp, err := dispatchOne(t, c, req)
		require.NoError(t, err)
		if resp != nil {
			out[i] = resp.(*kmsg.ProduceResponse)
		}
	}
	return out
}

// stripTimes leaves what the comparison is about.
func stripTimes(rs []*kmsg.ProduceResponse) []*kmsg.ProduceResponse {
	for _, r := range rs {
		if r == nil {
			continue
		}
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				r.Topics[i].Partitions[j].LogAppendTime = -1
			}
		}
	}
	return rs
}

// groupScenario: six pipelined requests over two topics with an idempotent
// producer chained across requests, a refused partition, a gap, a repeat
// of an earlier request's batch, and an acks=0 request in the middle.
func groupScenario(t *testing.T) []*kmsg.ProduceRequest {
	const pid = 7 << 32
	plain := batchtest.Batch{FirstTS: 1, Records: batchtest.SampleRecords()}.Encode(t)
	return []*kmsg.ProduceRequest{
		groupProduceReq(-1, groupPart{"a", 0, idemBatch(t, pid, 0, 0, 3)}, groupPart{"a", 1, plain}, groupPart{"b", 0, idemBatch(t, pid, 0, 0, 2)}),
		groupProduceReq(-1, groupPart{"a", 0, idemBatch(t, pid, 0, 3, 2)}, groupPart{"a", 9, plain}),
		groupProduceReq(0, groupPart{"b", 0, idemBatch(t, pid, 0, 2, 1)}),
		groupProduceReq(-1, groupPart{"a", 0, idemBatch(t, pid, 0, 7, 1)}, groupPart{"b", 1, plain}), // gap on a/0
		groupProduceReq(1, groupPart{"a", 0, idemBatch(t, pid, 0, 0, 3)}),                            // repeat of the first
		groupProduceReq(-1, groupPart{"a", 0, idemBatch(t, pid, 0, 5, 1)}, groupPart{"b", 0, idemBatch(t, pid, 0, 3, 1)}),
	}
}

// TestCoalescedProduceMatchesSequential: requests already waiting on a
// connection are written with one push per maxCoalesce of them and answered
// exactly as one push each would answer them, and store the same records.
func TestCoalescedProduceMatchesSequential(t *testing.T) {
	ng, fg := groupEnv(t)
	ns, fs := groupEnv(t)
	before := fg.count(routePushCall)
	grouped := stripTimes(answerQueued(t, ng, groupScenario(t)))
	require.Equal(t, 2, fg.count(routePushCall)-before, "five requests in one push, the sixth in the next")

	before = fs.count(routePushCall)
	sequential := stripTimes(answerSequential(t, ns, groupScenario(t)))
	require.Equal(t, 5, fs.count(routePushCall)-before, "one push per request that writes anything")
	require.Equal(t, sequential, grouped)

	// The outcomes themselves, so that agreeing on a wrong answer fails.
	p := func(r *kmsg.ProduceResponse, ti, pi int) kmsg.ProduceResponseTopicPartition {
		return r.Topics[ti].Partitions[pi]
	}
	require.Equal(t, int64(0), p(grouped[0], 0, 0).BaseOffset)
	require.Equal(t, int64(3), p(grouped[1], 0, 0).BaseOffset, "chained on request 1's batch")
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, p(grouped[1], 0, 1).ErrorCode)
	require.Nil(t, grouped[2], "acks=0 gets no frame")
	require.Equal(t, kerr.OutOfOrderSequenceNumber.Code, p(grouped[3], 0, 0).ErrorCode, "the gap refuses only its batch")
	require.Equal(t, int16(0), p(grouped[3], 1, 0).ErrorCode)
	require.Equal(t, int64(0), p(grouped[4], 0, 0).BaseOffset, "a repeat is answered with its first offsets")
	require.Equal(t, int64(5), p(grouped[5], 0, 0).BaseOffset, "nothing of the refused gap was written")
	require.Equal(t, int64(3), p(grouped[5], 1, 0).BaseOffset, "chained on the acks=0 request's batch")

	for _, tp := range []struct {
		topic string
		part  string
	}{{"a", "0"}, {"a", "1"}, {"b", "0"}, {"b", "1"}} {
		require.Equal(t, storedCount(t, fs, tp.topic, tp.part), storedCount(t, fg, tp.topic, tp.part), "%s/%s", tp.topic, tp.part)
	}
}

func storedCount(t *testing.T, fq *devQueen, topic, partition string) int {
	t.Helper()
	e := &dataEnv{t: t, q: fq.q}
	var p int32
	for _, c := range partition {
		p = p*10 + int32(c-'0')
	}
	_, recs := e.stored(topic, p)
	return len(recs)
}

// TestCoalescedProduceFailedPush: when the shared push fails, every
// request's written batches carry the failure, a batch chained behind a
// failed one is refused as it would be alone, nothing is remembered, and
// the producer resends from its first batch.
func TestCoalescedProduceFailedPush(t *testing.T) {
	const pid = 9 << 32
	scenario := func() []*kmsg.ProduceRequest {
		return []*kmsg.ProduceRequest{
			groupProduceReq(-1, groupPart{"a", 0, idemBatch(t, pid, 0, 0, 2)}, groupPart{"b", 2, batchtest.Batch{FirstTS: 1, Records: batchtest.SampleRecords()}.Encode(t)}),
			groupProduceReq(-1, groupPart{"a", 0, idemBatch(t, pid, 0, 2, 2)}),
			groupProduceReq(-1, groupPart{"a", 0, idemBatch(t, pid, 0, 0, 2)}), // the client's repeat
		}
	}
	failFirstPush := func(fq *devQueen) {
		var failed atomic.Bool
		fq.setFault(func(r *http.Request) (int, string, string) {
			if r.URL.Path == "/api/v1/push" && failed.CompareAndSwap(false, true) {
				return http.StatusServiceUnavailable, "", "unavailable"
			}
			return 0, "", ""
		})
	}
	ng, fg := groupEnv(t)
	failFirstPush(fg)
	grouped := stripTimes(answerQueued(t, ng, scenario()))
	ns, fs := groupEnv(t)
	failFirstPush(fs)
	sequential := stripTimes(answerSequential(t, ns, scenario()))

	code := func(r *kmsg.ProduceResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode }
	require.Equal(t, kerr.RequestTimedOut.Code, code(grouped[0]))
	require.Equal(t, kerr.RequestTimedOut.Code, grouped[0].Topics[1].Partitions[0].ErrorCode)
	// Behind a failed write the next batch is refused retriably, not
	// OUT_OF_ORDER, which librdkafka answers with an epoch bump.
	require.Equal(t, kerr.RequestTimedOut.Code, code(grouped[1]), "behind a failed write")
	require.Equal(t, kerr.RequestTimedOut.Code, code(sequential[0]))
	require.Equal(t, kerr.RequestTimedOut.Code, code(sequential[1]))
	// Alone, the repeat would have been written by a push of its own; in
	// the group it shared the failed push, so it fails retriably instead.
	require.Equal(t, int64(0), sequential[2].Topics[0].Partitions[0].BaseOffset)
	require.Equal(t, kerr.RequestTimedOut.Code, code(grouped[2]))
	require.Equal(t, 0, storedCount(t, fg, "a", "0"), "nothing written")

	// Nothing was remembered: the producer starts over at sequence 0.
	again := stripTimes(answerQueued(t, ng, []*kmsg.ProduceRequest{
		groupProduceReq(-1, groupPart{"a", 0, idemBatch(t, pid, 0, 0, 2)}),
		groupProduceReq(-1, groupPart{"a", 0, idemBatch(t, pid, 0, 2, 2)}),
	}))
	require.Equal(t, int64(0), again[0].Topics[0].Partitions[0].BaseOffset)
	require.Equal(t, int64(2), again[1].Topics[0].Partitions[0].BaseOffset)
}

// TestCoalescedProduceLargeFramesAlone: requests whose frames pass
// coalesceFrameBytes together are each their own push.
func TestCoalescedProduceLargeFramesAlone(t *testing.T) {
	n, fq := groupEnv(t)
	value := []byte(strings.Repeat("y", 300<<10)) // uncompressed: the frame is the size
	var reqs []*kmsg.ProduceRequest
	for i := 0; i < 3; i++ {
		reqs = append(reqs, groupProduceReq(-1, groupPart{"a", 1, batchtest.Batch{FirstTS: 1, Records: []kmsg.Record{{Value: value}}}.Encode(t)}))
	}
	before := fq.count(routePushCall)
	got := answerQueued(t, n, reqs)
	require.Equal(t, 3, fq.count(routePushCall)-before)
	for i, r := range got {
		require.Equal(t, int64(i), r.Topics[0].Partitions[0].BaseOffset)
	}
}

// TestCoalescedProduceCutAtBodyBound: a group stops before the request
// that would take its push body past coalesceBodyBytes; that request is
// answered by the next push, in order.
func TestCoalescedProduceCutAtBodyBound(t *testing.T) {
	n, fq := groupEnv(t)
	// 6.7 MiB of base64 per request from a frame of a few KiB: small
	// enough frames to be grouped, too large a push together.
	big := []byte(strings.Repeat("x", 5<<20))
	var reqs []*kmsg.ProduceRequest
	for i := 0; i < 3; i++ {
		raw := batchtest.Batch{Codec: recordbatch.CodecLz4, FirstTS: 1, Records: []kmsg.Record{{Value: big}}}.Encode(t)
		require.Less(t, len(raw), coalesceFrameBytes/3)
		reqs = append(reqs, groupProduceReq(-1, groupPart{"a", 0, raw}))
	}
	_, taken, err := n.produceGroup(context.Background(), testConn(t, n), reqs)
	require.NoError(t, err)
	require.Equal(t, 2, taken, "the third would pass %d bytes", coalesceBodyBytes)

	before := fq.count(routePushCall)
	got := answerQueued(t, n, reqs)
	require.Equal(t, 2, fq.count(routePushCall)-before)
	for i, r := range got {
		require.Equal(t, int64(2+i), r.Topics[0].Partitions[0].BaseOffset)
	}
}

// TestCoalescedProduceShardsByPartition: a group touching several
// partitions with enough records is written by concurrent pushes holding
// whole partitions, so chains of one producer-partition stay in order, and
// a push that fails fails only its own partitions.
func TestCoalescedProduceShardsByPartition(t *testing.T) {
	const pid = 11 << 32
	n, fq := groupEnv(t)
	batch := func(p int32, seq int32) groupPart {
		return groupPart{"a", p, idemBatch(t, pid, 0, seq, 150)}
	}
	reqs := []*kmsg.ProduceRequest{
		groupProduceReq(-1, batch(0, 0), batch(1, 0), batch(2, 0), batch(3, 0)),
		groupProduceReq(-1, batch(0, 150), batch(1, 150), batch(2, 150), batch(3, 150)),
	}
	var failing atomic.Bool
	var pushes atomic.Int64
	fq.setFault(func(r *http.Request) (int, string, string) {
		if r.URL.Path != "/api/v1/push" {
			return 0, "", ""
		}
		pushes.Add(1)
		if failing.Load() && strings.Contains(peekBody(r), `"partition":"2"`) {
			return http.StatusServiceUnavailable, "", "unavailable"
		}
		return 0, "", ""
	})
	got := answerQueued(t, n, reqs)
	require.Equal(t, int64(4), pushes.Load(), "1200 records over four partitions: four pushes")
	for i, r := range got {
		for j, p := range r.Topics[0].Partitions {
			require.Equal(t, int16(0), p.ErrorCode, "request %d partition %d", i, j)
			require.Equal(t, int64(150*i), p.BaseOffset, "request %d partition %d chained in order", i, j)
		}
	}

	failing.Store(true)
	got = answerQueued(t, n, []*kmsg.ProduceRequest{
		groupProduceReq(-1, batch(0, 300), batch(1, 300), batch(2, 300), batch(3, 300)),
		groupProduceReq(-1, batch(0, 450), batch(1, 450), batch(2, 450), batch(3, 450)),
	})
	for i, r := range got {
		for j, p := range r.Topics[0].Partitions {
			switch {
			case j == 2 && i == 0:
				require.Equal(t, kerr.RequestTimedOut.Code, p.ErrorCode, "the failed push's partition")
			case j == 2:
				require.Equal(t, kerr.RequestTimedOut.Code, p.ErrorCode, "behind the failed batch: retriable")
			default:
				require.Equal(t, int16(0), p.ErrorCode, "request %d partition %d", i, j)
				require.Equal(t, int64(300+150*i), p.BaseOffset)
			}
		}
	}
	require.Equal(t, 300, storedCount(t, fq, "a", "2"))
	require.Equal(t, 600, storedCount(t, fq, "a", "1"))
}

// peekBody reads r's body and puts it back for the broker.
func peekBody(r *http.Request) string {
	b, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(b))
	return string(b)
}

// TestCoalescedProduceWindowEvictedMidGroup: a written batch is answered
// as written even when remembering an earlier batch of the group evicted
// its window meanwhile (the node tracks a bounded number of windows).
func TestCoalescedProduceWindowEvictedMidGroup(t *testing.T) {
	const pid = 13 << 32
	n, _ := groupEnv(t)
	n.sequencer = producer.NewSequencer(1)
	got := answerQueued(t, n, []*kmsg.ProduceRequest{groupProduceReq(-1, groupPart{"a", 1, idemBatch(t, pid, 0, 0, 3)})})
	require.Equal(t, int64(0), got[0].Topics[0].Partitions[0].BaseOffset)
	// Partition 0's new window evicts partition 1's before 1 is settled.
	got = answerQueued(t, n, []*kmsg.ProduceRequest{groupProduceReq(-1, groupPart{"a", 0, idemBatch(t, pid, 0, 0, 1)}, groupPart{"a", 1, idemBatch(t, pid, 0, 3, 1)})})
	for j, p := range got[0].Topics[0].Partitions {
		require.Equal(t, int16(0), p.ErrorCode, "partition %d", j)
	}
	require.Equal(t, int64(3), got[0].Topics[0].Partitions[1].BaseOffset)
}

// TestCoalescedProduceSplitOnQueenBodyCeiling: with Queen's body ceiling
// (QUEEN_MAX_BODY_BYTES) below coalesceBodyBytes, two requests that each
// fit alone but not together are refused 413 as one push; each is then
// pushed alone and written, in order, as it would have been alone. A
// request too large alone is still MESSAGE_TOO_LARGE, and alone.
func TestCoalescedProduceSplitOnQueenBodyCeiling(t *testing.T) {
	e := newDataEnv(t, dev.Options{MaxBodyBytes: 1 << 20}, nil)
	e.createTopic("orders")
	record := func(size int) []byte {
		return batchtest.Batch{Codec: recordbatch.CodecLz4, FirstTS: 1, Records: []kmsg.Record{{Value: []byte(strings.Repeat("x", size))}}}.Encode(t)
	}
	// 400 KiB of value is about 540 KiB of push body: one fits, two do not.
	reqs := []*kmsg.ProduceRequest{
		groupProduceReq(-1, groupPart{"orders", 0, record(400 << 10)}),
		groupProduceReq(-1, groupPart{"orders", 0, record(400 << 10)}),
		groupProduceReq(-1, groupPart{"orders", 1, record(900 << 10)}), // too large alone
	}
	resps, taken, err := e.n.produceGroup(context.Background(), e.c, reqs)
	require.NoError(t, err)
	require.Equal(t, 3, taken, "coalesced: under coalesceBodyBytes")
	for i := range 2 {
		p := resps[i].Topics[0].Partitions[0]
		require.Equal(t, int16(0), p.ErrorCode, "request %d fits alone: %v", i, kerr.ErrorForCode(p.ErrorCode))
		require.Equal(t, int64(i), p.BaseOffset, "request %d, in order", i)
	}
	require.Equal(t, kerr.MessageTooLarge.Code, resps[2].Topics[0].Partitions[0].ErrorCode, "too large alone")
	require.Equal(t, int64(2), e.hwm("orders", 0))
	require.Equal(t, int64(0), e.hwm("orders", 1), "nothing of the refused request written")
}
