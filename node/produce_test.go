package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/envelope"
	"github.com/queen-mq/queen-kafka/faults"
	"github.com/queen-mq/queen-kafka/internal/testsupport/devbroker"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/queen/dev"
	"github.com/queen-mq/queen-kafka/recordbatch"
	"github.com/queen-mq/queen-kafka/recordbatch/batchtest"
	"github.com/queen-mq/queen-kafka/transport"
)

// dataEnv is a node in front of an in-process queen-dev broker, with a
// Conn to drive handlers and a direct Queen client to look behind them.
type dataEnv struct {
	t       testing.TB
	n       *Node
	c       *transport.Conn
	q       *queen.Client
	url     string
	fetches atomic.Int64 // POST /api/v1/fetch calls seen
}

func newDataEnv(t testing.TB, opts dev.Options, env map[string]string) *dataEnv {
	t.Helper()
	opts.Faults = true
	opts.SweepInterval = -1
	e := &dataEnv{t: t}
	b := devbroker.Start(t, opts, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/api/v1/fetch" {
				e.fetches.Add(1)
			}
			h.ServeHTTP(w, r)
		})
	})
	e.url, e.q = b.URL, b.Client
	e.n = e.node(env)
	e.c = e.conn(e.n)
	return e
}

// node builds another node over the same broker (a second facade, or the
// same one after a restart).
func (e *dataEnv) node(env map[string]string) *Node {
	e.t.Helper()
	return newNodeOn(e.t, e.url, env)
}

// conn is a Conn of n for driving handlers directly.
func (e *dataEnv) conn(n *Node) *transport.Conn {
	a, b := net.Pipe()
	e.t.Cleanup(func() { a.Close(); b.Close() })
	return n.srv.NewConn(a)
}

func (e *dataEnv) createTopic(name string) {
	e.t.Helper()
	_, err := e.q.Configure(context.Background(), name, nil)
	require.NoError(e.t, err)
}

// fault installs dev-broker fault rules until cleared.
func (e *dataEnv) fault(rules ...map[string]any) {
	e.t.Helper()
	body, _ := json.Marshal(map[string]any{"rules": rules})
	resp, err := http.Post(e.url+"/dev/faults", "application/json", bytes.NewReader(body))
	require.NoError(e.t, err)
	resp.Body.Close()
	require.Equal(e.t, http.StatusOK, resp.StatusCode)
}

func (e *dataEnv) clearFaults() {
	req, _ := http.NewRequest(http.MethodDelete, e.url+"/dev/faults", nil)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	resp.Body.Close()
}

func produceReq(version, acks int16, topic string, partition int32, raw []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = version, acks, 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, raw
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// produceOn sends one batch through c and returns the partition answer.
func (e *dataEnv) produceOn(c *transport.Conn, version int16, topic string, partition int32, raw []byte) (*kmsg.ProduceResponse, kmsg.ProduceResponseTopicPartition) {
	e.t.Helper()
	resp, err := e.n.handleProduce(context.Background(), c, produceReq(version, -1, topic, partition, raw))
	require.NoError(e.t, err)
	pr := resp.(*kmsg.ProduceResponse)
	return pr, pr.Topics[0].Partitions[0]
}

func (e *dataEnv) produce(topic string, partition int32, raw []byte) kmsg.ProduceResponseTopicPartition {
	e.t.Helper()
	_, p := e.produceOn(e.c, 9, topic, partition, raw)
	return p
}

// stored reads partition's records straight from Queen.
func (e *dataEnv) stored(topic string, partition int32) (queen.FetchResult, []envelope.Record) {
	e.t.Helper()
	rs, err := e.q.Fetch(context.Background(), queen.FetchRequest{Entries: []queen.FetchEntry{{Queue: topic, Partition: fmt.Sprint(partition), Offset: 0, MaxBytes: 8 << 20}}})
	require.NoError(e.t, err)
	var out []envelope.Record
	for _, r := range rs[0].Records {
		out = append(out, envelope.DecodePayload(r.Payload, queen.ParseTS(r.TS)))
	}
	return rs[0], out
}

func TestProduceStoresEnvelopesAtRealOffsets(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, nil)
	e.createTopic("orders")
	for _, codec := range []int{recordbatch.CodecNone, recordbatch.CodecGzip, recordbatch.CodecSnappy, recordbatch.CodecLz4, recordbatch.CodecZstd} {
		p := e.produce("orders", 1, batchtest.Batch{Codec: codec, FirstTS: 1787824800123, Records: batchtest.SampleRecords()}.Encode(t))
		require.Equal(t, int16(0), p.ErrorCode, kerr.ErrorForCode(p.ErrorCode))
		require.Equal(t, int64(codec*3), p.BaseOffset, "codec %d", codec)
	}
	res, recs := e.stored("orders", 1)
	require.Equal(t, int64(15), res.HighWatermark)
	for i := 0; i < 15; i += 3 {
		require.Equal(t, []byte("order-42"), recs[i].Key)
		require.Equal(t, []envelope.Header{{Key: "content-type", Value: []byte("application/json")}, {Key: "null-header"}}, recs[i].Headers)
		require.Equal(t, int64(1787824800123), recs[i].Timestamp)
		require.Nil(t, recs[i+1].Key)
		require.Equal(t, []byte{}, recs[i+2].Key)
		require.Nil(t, recs[i+2].Value)
	}
	// The stored payload is the envelope byte for byte.
	raw, err := e.q.Fetch(context.Background(), queen.FetchRequest{Entries: []queen.FetchEntry{{Queue: "orders", Partition: "1", Offset: 1, MaxBytes: 1}}})
	require.NoError(t, err)
	require.JSONEq(t, `{"k":null,"t":1787824800128,"v":"/wCA"}`, string(raw[0].Records[0].Payload))
}

func TestProduceRefusals(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, nil)
	e.createTopic("orders")
	good := batchtest.Batch{FirstTS: 1, Records: batchtest.SampleRecords()}.Encode(t)

	require.Equal(t, kerr.UnknownTopicOrPartition.Code, e.produce("absent", 0, good).ErrorCode, "not in the catalogue")
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, e.produce("__consumer_offsets", 0, good).ErrorCode)
	require.Equal(t, kerr.InvalidTopicException.Code, e.produce("bad name", 0, good).ErrorCode)
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, e.produce("orders", 4, good).ErrorCode, "width is 4")
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, e.produce("orders", -1, good).ErrorCode)

	bad := bytes.Clone(good)
	bad[len(bad)-1] ^= 1
	p := e.produce("orders", 0, bad)
	require.Equal(t, kerr.CorruptMessage.Code, p.ErrorCode)
	require.NotNil(t, p.ErrorMessage)
	require.Contains(t, *p.ErrorMessage, "CRC")

	_, zp := e.produceOn(e.c, 6, "orders", 0, batchtest.Batch{Codec: recordbatch.CodecZstd, FirstTS: 1, Records: batchtest.SampleRecords()}.Encode(t))
	require.Equal(t, kerr.UnsupportedCompressionType.Code, zp.ErrorCode)

	twice := produceReq(9, -1, "orders", 0, good)
	twice.Topics[0].Partitions = append(twice.Topics[0].Partitions, twice.Topics[0].Partitions[0])
	resp, err := e.n.handleProduce(context.Background(), e.c, twice)
	require.NoError(t, err)
	tw := resp.(*kmsg.ProduceResponse).Topics[0].Partitions
	require.Equal(t, int16(0), tw[0].ErrorCode)
	require.Equal(t, kerr.InvalidRequest.Code, tw[1].ErrorCode, "a partition named twice")

	// A transactional request carries transactional batches only, and a
	// transactional batch needs the request's transactional id.
	txn := produceReq(9, -1, "orders", 0, good)
	id := "tx"
	txn.TransactionID = &id
	resp, err = e.n.handleProduce(context.Background(), e.c, txn)
	require.NoError(t, err)
	require.Equal(t, kerr.InvalidRecord.Code, resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode)
	_, tb := e.produceOn(e.c, 9, "orders", 0, batchtest.Batch{Attrs: recordbatch.AttrTransactional, Idem: true, PID: 1, FirstTS: 1, Records: batchtest.SampleRecords()}.Encode(t))
	require.Equal(t, kerr.TransactionalIDAuthorizationFailed.Code, tb.ErrorCode)

	res, _ := e.stored("orders", 0)
	require.Equal(t, int64(3), res.HighWatermark, "nothing refused was written")
}

// TestProduceManyPartitionsOnePush: every partition of a request goes in one
// push, each answered its own base offset.
func TestProduceManyPartitionsOnePush(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, nil)
	e.createTopic("a")
	e.createTopic("b")
	e.produce("a", 2, batchtest.Batch{FirstTS: 1, Records: batchtest.SampleRecords()[:1]}.Encode(t))
	req := produceReq(9, -1, "a", 2, batchtest.Batch{FirstTS: 1, Records: batchtest.SampleRecords()}.Encode(t))
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = 3, batchtest.Batch{Codec: recordbatch.CodecLz4, FirstTS: 1, Records: batchtest.SampleRecords()}.Encode(t)
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp)
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "b"
	rp.Partition = 0
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := e.n.handleProduce(context.Background(), e.c, req)
	require.NoError(t, err)
	pr := resp.(*kmsg.ProduceResponse)
	require.Equal(t, int64(1), pr.Topics[0].Partitions[0].BaseOffset)
	require.Equal(t, int64(0), pr.Topics[0].Partitions[1].BaseOffset)
	require.Equal(t, int64(0), pr.Topics[1].Partitions[0].BaseOffset)
	for _, tp := range pr.Topics {
		for _, p := range tp.Partitions {
			require.Equal(t, int16(0), p.ErrorCode)
		}
	}
}

func TestProduceAcksZeroAnswersNothing(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, nil)
	e.createTopic("orders")
	resp, err := dispatchOne(t, e.c, produceReq(9, 0, "orders", 0, batchtest.Batch{FirstTS: 1, Records: batchtest.SampleRecords()}.Encode(t)))
	require.NoError(t, err)
	require.Nil(t, resp)
	res, _ := e.stored("orders", 0)
	require.Equal(t, int64(3), res.HighWatermark, "processed exactly as with acks")
	resp, err = dispatchOne(t, e.c, produceReq(9, 0, "absent", 0, batchtest.Batch{FirstTS: 1, Records: batchtest.SampleRecords()}.Encode(t)))
	require.NoError(t, err)
	require.Nil(t, resp, "a failure is logged, not answered")
}

// TestProduceQueenFaults: each Queen failure becomes the code seed 001's
// throttling table and queen-api §0.2 name.
func TestProduceQueenFaults(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, nil)
	e.createTopic("orders")
	batch := batchtest.Batch{FirstTS: 1, Records: batchtest.SampleRecords()}.Encode(t)
	e.produce("orders", 0, batch) // the catalogue is loaded before faults start
	two := 2
	cases := []struct {
		rule     map[string]any
		code     int16
		throttle int32
	}{
		{map[string]any{"route": "push", "status": 429, "retryAfter": two, "count": 1}, kerr.RequestTimedOut.Code, 2000},
		{map[string]any{"route": "push", "status": 429, "count": 1}, kerr.RequestTimedOut.Code, 1000},
		{map[string]any{"route": "push", "status": 403, "count": 1}, kerr.TopicAuthorizationFailed.Code, 0},
		{map[string]any{"route": "push", "status": 401, "count": 1}, kerr.TopicAuthorizationFailed.Code, 0},
		{map[string]any{"route": "push", "status": 503, "count": 1}, kerr.RequestTimedOut.Code, 0},
		{map[string]any{"route": "push", "status": 500, "count": 1}, kerr.RequestTimedOut.Code, 0},
		{map[string]any{"route": "push", "status": 413, "count": 1}, kerr.MessageTooLarge.Code, 0},
		{map[string]any{"route": "push", "status": 400, "count": 1}, kerr.InvalidRecord.Code, 0},
	}
	for _, tc := range cases {
		e.fault(tc.rule)
		resp, p := e.produceOn(e.c, 9, "orders", 0, batch)
		require.Equal(t, tc.code, p.ErrorCode, "%v: %v", tc.rule, kerr.ErrorForCode(p.ErrorCode))
		require.Equal(t, tc.throttle, resp.ThrottleMillis, "%v", tc.rule)
		require.Equal(t, int64(-1), p.BaseOffset)
		if tc.code == kerr.TopicAuthorizationFailed.Code {
			require.NotNil(t, p.ErrorMessage, "v8+ carries the reason")
		}
		e.clearFaults()
	}
	res, _ := e.stored("orders", 0)
	require.Equal(t, int64(3), res.HighWatermark)
}

// TestPartitionOutcome: how one partition's push results become its answer.
func TestPartitionOutcome(t *testing.T) {
	off := func(o int64) *int64 { return &o }
	base, code, _ := faults.PartitionOutcome([]queen.PushResult{{Status: queen.StatusQueued, Offset: off(7)}, {Status: queen.StatusQueued, Offset: off(8)}})
	require.Equal(t, int64(7), base)
	require.Equal(t, int16(0), code)
	_, code, _ = faults.PartitionOutcome([]queen.PushResult{{Status: queen.StatusQueued, Offset: off(7)}, {Status: queen.StatusQueued, Offset: off(9)}})
	require.Equal(t, kerr.UnknownServerError.Code, code, "a gap")
	_, code, _ = faults.PartitionOutcome([]queen.PushResult{{Status: queen.StatusBuffered}})
	require.Equal(t, kerr.RequestTimedOut.Code, code)
	_, code, _ = faults.PartitionOutcome([]queen.PushResult{{Status: queen.StatusQueued, Offset: off(1)}, {Status: queen.StatusFailed}})
	require.Equal(t, kerr.KafkaStorageError.Code, code)
	_, code, _ = faults.PartitionOutcome([]queen.PushResult{{Status: queen.StatusError}})
	require.Equal(t, kerr.KafkaStorageError.Code, code)
}
