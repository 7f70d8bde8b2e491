package node

import (
	"bufio"
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/envelope"
	"github.com/queen-mq/queen-kafka/recordbatch"
	"github.com/queen-mq/queen-kafka/recordbatch/batchtest"
	"github.com/queen-mq/queen-kafka/transport"
)

// seenRequest is one Request call an observer heard.
type seenRequest struct{ key, version, code int16 }

// recordingObserver keeps every request it hears, in order.
type recordingObserver struct {
	nopObserver
	mu   sync.Mutex
	seen []seenRequest
	// produced sums Produced: records, batches.
	produced [2]int
}

func (o *recordingObserver) Produced(records, batches int) {
	o.mu.Lock()
	o.produced[0] += records
	o.produced[1] += batches
	o.mu.Unlock()
}

func (o *recordingObserver) Request(key, version, code int16, _ int, _, d time.Duration) {
	if d <= 0 {
		panic("a request observed with no duration")
	}
	o.mu.Lock()
	o.seen = append(o.seen, seenRequest{key, version, code})
	o.mu.Unlock()
}

func (o *recordingObserver) requests() []seenRequest {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]seenRequest(nil), o.seen...)
}

// runQueued runs the connection's answer loop over reqs, all already read
// and waiting, and returns the answers it wrote (nil for a request that
// got no frame: acks=0), checking correlation ids and order.
func runQueued(t *testing.T, n *Node, reqs []kmsg.Request) []kmsg.Response {
	t.Helper()
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	c := n.srv.NewConn(a)
	frames := make([][]byte, len(reqs))
	fmtr := kmsg.NewRequestFormatter(kmsg.FormatterClientID("test"))
	for i, req := range reqs {
		frames[i] = fmtr.AppendRequest(nil, req, int32(i+1))[4:]
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = c.AnswerQueued(context.Background(), frames) }()
	k := &kclient{t: t, nc: b, br: bufio.NewReader(b)}
	out := make([]kmsg.Response, len(reqs))
	for i, req := range reqs {
		if p, ok := req.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
			continue
		}
		corr, resp := k.recv(req)
		require.Equal(t, int32(i+1), corr, "answers in request order")
		out[i] = resp
	}
	<-done
	return out
}

// TestDispatchObservesEveryRequestOnce: a request answered alone and each
// request of a coalesced produce group pass the one dispatch point, each
// heard once with its own version and its answer's first error code, an
// acks=0 produce (no frame) included.
func TestDispatchObservesEveryRequestOnce(t *testing.T) {
	n, fq := groupEnv(t)
	obs := &recordingObserver{}
	n.obs = obs
	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 7
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("__internal")
	meta.Topics = append(meta.Topics, mt)
	versions := kmsg.NewPtrApiVersionsRequest()
	versions.Version = 3
	versions.ClientSoftwareName, versions.ClientSoftwareVersion = "test", "1"

	reqs := []kmsg.Request{versions}
	scenario := groupScenario(t)
	scenario[1].Version = 7 // each request keeps its own version in the group
	for _, r := range scenario {
		reqs = append(reqs, r)
	}
	reqs = append(reqs, meta)
	before := fq.count(routePushCall)
	runQueued(t, n, reqs)
	require.Equal(t, 2, fq.count(routePushCall)-before, "the produce requests were coalesced")

	produce, none := kmsg.Produce.Int16(), int16(0)
	require.Equal(t, []seenRequest{
		{kmsg.ApiVersions.Int16(), 3, none},
		{produce, 9, none},
		{produce, 7, kerr.UnknownTopicOrPartition.Code},
		{produce, 9, none}, // acks=0: no frame, heard all the same
		{produce, 9, kerr.OutOfOrderSequenceNumber.Code},
		{produce, 9, none},
		{produce, 9, none}, // the second group
		{kmsg.Metadata.Int16(), 7, kerr.UnknownTopicOrPartition.Code},
	}, obs.requests())
	// What was written, batch by batch: request 1 all three (3, 3 and 2
	// records), request 2 its first (2), the acks=0 one (1), request 4 its
	// plain batch after the gap (3), not the repeat of request 5, and both
	// of request 6 (1 each).
	plain := len(batchtest.SampleRecords())
	require.Equal(t, [2]int{3 + plain + 2 + 2 + 1 + plain + 1 + 1, 8}, obs.produced)

	// An acks=0 produce read alone: no frame, its failure heard.
	lone := groupProduceReq(0, groupPart{"absent", 0, idemBatch(t, 9<<32, 0, 0, 1)})
	resp, err := dispatchOne(t, testConn(t, n), lone)
	require.NoError(t, err)
	require.Nil(t, resp, "acks=0 gets no frame")
	seen := obs.requests()
	require.Equal(t, seenRequest{produce, 9, kerr.UnknownTopicOrPartition.Code}, seen[len(seen)-1])
}

// dispatchOne runs req on c as the connection runs a request read alone,
// and returns what the connection would send (nil: no frame).
func dispatchOne(t testing.TB, c *transport.Conn, req kmsg.Request) (kmsg.Response, error) {
	t.Helper()
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("test")).AppendRequest(nil, req, 1)
	return c.Dispatch(context.Background(), frame[4:])
}

// TestBatchRecords: the records and last offset of a fetched record set,
// several batches included; a truncated batch ends the count.
func TestBatchRecords(t *testing.T) {
	batch := func(offsets ...int64) []byte {
		var recs []recordbatch.Fetched
		for _, o := range offsets {
			recs = append(recs, recordbatch.Fetched{Offset: o, Record: envelope.Record{Value: []byte("v"), Timestamp: 1}})
		}
		return recordbatch.AppendFetchBatch(nil, recs)
	}
	n, last := batchRecords(nil)
	require.Equal(t, [2]int64{0, 0}, [2]int64{int64(n), last})
	set := append(batch(10, 11, 13), batch(20, 21)...)
	n, last = batchRecords(set)
	require.Equal(t, [2]int64{5, 21}, [2]int64{int64(n), last}, "two batches, gaps allowed")
	n, last = batchRecords(set[:len(set)-1])
	require.Equal(t, [2]int64{3, 13}, [2]int64{int64(n), last}, "a truncated batch is not counted")
}
