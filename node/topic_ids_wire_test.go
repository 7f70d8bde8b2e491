package node

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/queen-mq/queen-kafka/queen/dev"
	"github.com/queen-mq/queen-kafka/recordbatch/batchtest"
)

// versionLog is an Observer that remembers the versions each API was
// answered at, so that a client test proves the version it meant to cover
// was the one on the wire.
type versionLog struct {
	Observer
	mu   sync.Mutex
	seen map[int16]map[int16]bool
}

func logVersions(n *Node) *versionLog {
	l := &versionLog{Observer: n.obs, seen: map[int16]map[int16]bool{}}
	n.obs = l
	return l
}

func (l *versionLog) Request(key, version, code int16, bytes int, throttle, took time.Duration) {
	l.mu.Lock()
	if l.seen[key] == nil {
		l.seen[key] = map[int16]bool{}
	}
	l.seen[key][version] = true
	l.mu.Unlock()
	l.Observer.Request(key, version, code, bytes, throttle, took)
}

func (l *versionLog) saw(key kmsg.Key, version int16) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seen[key.Int16()][version]
}

func metaReq(version int16, topics ...kmsg.MetadataRequestTopic) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = version
	req.Topics = topics
	return req
}

func byName(name string) kmsg.MetadataRequestTopic {
	return kmsg.MetadataRequestTopic{Topic: kmsg.StringPtr(name)}
}

func byID(id [16]byte) kmsg.MetadataRequestTopic { return kmsg.MetadataRequestTopic{TopicID: id} }

// Metadata over the wire at the boundary versions: v9 carries no id, v10
// answers the queue's id, v10 and v11 refuse a request naming topics by id
// or a null name as Kafka does (INVALID_REQUEST), v12 answers topics asked
// by id (an unknown id is UNKNOWN_TOPIC_ID with a null name and the id
// asked for), v13's top-level error is 0.
func TestMetadataTopicIDsOverTheWire(t *testing.T) {
	n, dq := newTestNode(t, nil)
	qid := uuid.MustParse(dq.addQueue("orders", 3))
	k := dial(t, serveTestNode(t, n))

	v9 := k.roundTrip(metaReq(9, byName("orders"))).(*kmsg.MetadataResponse)
	require.Len(t, v9.Topics, 1)
	require.Equal(t, [16]byte{}, v9.Topics[0].TopicID, "v9 has no topic id on the wire")

	for _, v := range []int16{10, 11, 12, 13} {
		r := k.roundTrip(metaReq(v, byName("orders"))).(*kmsg.MetadataResponse)
		require.Len(t, r.Topics, 1)
		require.EqualValues(t, 0, r.Topics[0].ErrorCode, "v%d", v)
		require.Equal(t, [16]byte(qid), r.Topics[0].TopicID, "v%d: the queue's id", v)
		require.Len(t, r.Topics[0].Partitions, 4, "v%d", v)
		all := k.roundTrip(metaReq(v)).(*kmsg.MetadataResponse) // null topics: all of them
		require.Equal(t, [16]byte(qid), topicOf(t, all, "orders").TopicID, "v%d all topics", v)
	}

	for _, v := range []int16{10, 11} {
		r := k.roundTrip(metaReq(v, byName("orders"), byID(qid))).(*kmsg.MetadataResponse)
		require.Len(t, r.Topics, 2)
		for _, tp := range r.Topics {
			require.Equal(t, kerr.InvalidRequest.Code, tp.ErrorCode, "v%d names a topic by id", v)
		}
		r = k.roundTrip(metaReq(v, kmsg.MetadataRequestTopic{})).(*kmsg.MetadataResponse)
		require.Equal(t, kerr.InvalidRequest.Code, r.Topics[0].ErrorCode, "v%d with a null name", v)
	}

	unknown := uuid.New()
	for _, v := range []int16{12, 13} {
		r := k.roundTrip(metaReq(v, byID(qid), byID(unknown), byName("orders"))).(*kmsg.MetadataResponse)
		require.Len(t, r.Topics, 3)
		known, missing, named := r.Topics[0], r.Topics[1], r.Topics[2]
		require.EqualValues(t, 0, known.ErrorCode)
		require.NotNil(t, known.Topic)
		require.Equal(t, "orders", *known.Topic)
		require.Equal(t, [16]byte(qid), known.TopicID)
		require.Len(t, known.Partitions, 4)
		require.Equal(t, kerr.UnknownTopicID.Code, missing.ErrorCode, "v%d unknown id", v)
		require.Nil(t, missing.Topic, "v%d: an unknown id's entry has a null name", v)
		require.Equal(t, [16]byte(unknown), missing.TopicID)
		require.Equal(t, [16]byte(qid), named.TopicID)
		require.EqualValues(t, 0, r.ErrorCode)
	}
	// A by-id request never creates a topic, whatever it allows.
	req := metaReq(12, byID(unknown))
	req.AllowAutoTopicCreation = true
	r := k.roundTrip(req).(*kmsg.MetadataResponse)
	require.Equal(t, kerr.UnknownTopicID.Code, r.Topics[0].ErrorCode)
	require.Nil(t, dq.queue(""), "nothing was created")
}

// A topic auto-created by Metadata v10+ is answered with its new queue's
// id in the same answer.
func TestMetadataAutoCreateAnswersID(t *testing.T) {
	n, dq := newTestNode(t, nil)
	k := dial(t, serveTestNode(t, n))
	req := metaReq(12, byName("fresh"))
	req.AllowAutoTopicCreation = true
	r := k.roundTrip(req).(*kmsg.MetadataResponse)
	require.EqualValues(t, 0, r.Topics[0].ErrorCode)
	q := dq.queue("fresh")
	require.NotNil(t, q)
	require.Equal(t, [16]byte(uuid.MustParse(q.ID)), r.Topics[0].TopicID)
}

func deleteReq(version int16, topics ...kmsg.DeleteTopicsRequestTopic) *kmsg.DeleteTopicsRequest {
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version = version
	req.Topics = topics
	return req
}

// CreateTopics v7 answers the created queue's id; DeleteTopics v6 deletes
// by id and answers name and id, refuses an unknown id UNKNOWN_TOPIC_ID
// (null name, the id asked for), a name and an id together or neither
// INVALID_REQUEST, and answers a deletion by name with the topic's id.
func TestCreateAndDeleteTopicsByIDOverTheWire(t *testing.T) {
	n, dq := newTestNode(t, nil)
	k := dial(t, serveTestNode(t, n))

	create := kmsg.NewPtrCreateTopicsRequest()
	create.Version = 7
	for _, name := range []string{"by-id", "by-name"} {
		tp := kmsg.NewCreateTopicsRequestTopic()
		tp.Topic, tp.NumPartitions, tp.ReplicationFactor = name, 2, 1
		create.Topics = append(create.Topics, tp)
	}
	cr := k.roundTrip(create).(*kmsg.CreateTopicsResponse)
	ids := map[string][16]byte{}
	for _, rt := range cr.Topics {
		require.EqualValues(t, 0, rt.ErrorCode, rt.Topic)
		q := dq.queue(rt.Topic)
		require.NotNil(t, q, rt.Topic)
		require.Equal(t, [16]byte(uuid.MustParse(q.ID)), rt.TopicID, "%s: v7 answers the queue's id", rt.Topic)
		ids[rt.Topic] = rt.TopicID
	}
	again := k.roundTrip(create).(*kmsg.CreateTopicsResponse)
	require.Equal(t, kerr.TopicAlreadyExists.Code, again.Topics[0].ErrorCode)
	require.Equal(t, [16]byte{}, again.Topics[0].TopicID, "a refused create has no id")

	unknown := uuid.New()
	dr := k.roundTrip(deleteReq(6,
		kmsg.DeleteTopicsRequestTopic{TopicID: ids["by-id"]},
		kmsg.DeleteTopicsRequestTopic{TopicID: unknown},
		kmsg.DeleteTopicsRequestTopic{Topic: kmsg.StringPtr("by-name")},
		kmsg.DeleteTopicsRequestTopic{Topic: kmsg.StringPtr("by-name"), TopicID: unknown},
		kmsg.DeleteTopicsRequestTopic{},
	)).(*kmsg.DeleteTopicsResponse)
	require.Len(t, dr.Topics, 5)
	byIDAns, unknownAns, byNameAns, bothAns, neitherAns := dr.Topics[0], dr.Topics[1], dr.Topics[2], dr.Topics[3], dr.Topics[4]

	require.EqualValues(t, 0, byIDAns.ErrorCode)
	require.Equal(t, "by-id", *byIDAns.Topic)
	require.Equal(t, ids["by-id"], byIDAns.TopicID)
	require.Nil(t, dq.queue("by-id"), "deleted by id")

	require.Equal(t, kerr.UnknownTopicID.Code, unknownAns.ErrorCode)
	require.Nil(t, unknownAns.Topic)
	require.Equal(t, [16]byte(unknown), unknownAns.TopicID)
	require.NotNil(t, unknownAns.ErrorMessage)

	require.EqualValues(t, 0, byNameAns.ErrorCode)
	require.Equal(t, ids["by-name"], byNameAns.TopicID, "a deletion by name answers the id")
	require.Nil(t, dq.queue("by-name"))

	require.Equal(t, kerr.InvalidRequest.Code, bothAns.ErrorCode)
	require.Equal(t, kerr.InvalidRequest.Code, neitherAns.ErrorCode)

	// The deleted id is unknown from now on, to DeleteTopics and Metadata.
	dr = k.roundTrip(deleteReq(6, kmsg.DeleteTopicsRequestTopic{TopicID: ids["by-id"]})).(*kmsg.DeleteTopicsResponse)
	require.Equal(t, kerr.UnknownTopicID.Code, dr.Topics[0].ErrorCode)
	mr := k.roundTrip(metaReq(12, byID(ids["by-id"]))).(*kmsg.MetadataResponse)
	require.Equal(t, kerr.UnknownTopicID.Code, mr.Topics[0].ErrorCode)
}

// Produce v13 names topics by id: a known id writes to its queue, an
// unknown one is UNKNOWN_TOPIC_ID on each of its partitions and the answer
// carries the ids asked for.
func TestProduceV13ByIDOverTheWire(t *testing.T) {
	n, dq := newTestNode(t, nil)
	qid := uuid.MustParse(dq.addQueue("orders", 1))
	k := dial(t, serveTestNode(t, n))
	unknown := uuid.New()

	batch := func() []byte {
		return batchtest.Batch{FirstTS: 1, Records: []kmsg.Record{{Value: []byte("by id")}}}.Encode(t)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 13, -1, 5000
	for _, id := range [][16]byte{qid, unknown} {
		tp := kmsg.NewProduceRequestTopic()
		tp.TopicID = id
		p := kmsg.NewProduceRequestTopicPartition()
		p.Partition, p.Records = 0, batch()
		tp.Partitions = append(tp.Partitions, p)
		req.Topics = append(req.Topics, tp)
	}
	resp := k.roundTrip(req).(*kmsg.ProduceResponse)
	require.Len(t, resp.Topics, 2)
	require.Equal(t, [16]byte(qid), resp.Topics[0].TopicID)
	require.EqualValues(t, 0, resp.Topics[0].Partitions[0].ErrorCode, "%v", resp.Topics[0].Partitions[0].ErrorMessage)
	require.EqualValues(t, 1, resp.Topics[0].Partitions[0].BaseOffset, "after the one native message")
	require.Equal(t, [16]byte(unknown), resp.Topics[1].TopicID)
	require.Equal(t, kerr.UnknownTopicID.Code, resp.Topics[1].Partitions[0].ErrorCode)
}

// A real franz-go client at each Produce version from v9 to v13 and each
// Metadata version from v9 to v13 (kversion pins the step): it produces,
// the facade answers at that version, and a consumer reads every record
// back at its offset.
func TestKgoProduceAtEachVersion(t *testing.T) {
	addr, env := fixedAddrEnv(t, nil)
	e := newDataEnv(t, dev.Options{}, env)
	log := logVersions(e.n)
	serveTestNode(t, e.n)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for v := int16(9); v <= 13; v++ {
		topic := fmt.Sprintf("produce-v%d", v)
		vs := kversion.Stable()
		vs.SetMaxKeyVersion(kmsg.Produce.Int16(), v)
		vs.SetMaxKeyVersion(kmsg.Metadata.Int16(), v)
		prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.MaxVersions(vs), kgo.AllowAutoTopicCreation(), kgo.ProducerLinger(0),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(topic))
		require.NoError(t, err)
		var sent []*kgo.Record
		for i := 0; i < 10; i++ {
			sent = append(sent, &kgo.Record{Partition: int32(i % 2), Value: fmt.Appendf(nil, "v%d-%d", v, i)})
		}
		require.NoError(t, prod.ProduceSync(ctx, sent...).FirstErr(), "v%d", v)
		prod.Close()
		require.True(t, log.saw(kmsg.Produce, v), "no Produce v%d reached the facade", v)
		require.True(t, log.saw(kmsg.Metadata, v), "no Metadata v%d reached the facade", v)

		cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.MaxVersions(vs), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(time.Second))
		require.NoError(t, err)
		var got []*kgo.Record
		for len(got) < len(sent) && ctx.Err() == nil {
			fs := cons.PollFetches(ctx)
			require.Empty(t, fs.Errors(), "v%d", v)
			got = append(got, fs.Records()...)
		}
		cons.Close()
		require.Len(t, got, len(sent), "v%d", v)
		offsets := map[string]int64{}
		for _, r := range sent {
			offsets[string(r.Value)] = r.Offset
		}
		for _, r := range got {
			require.Equal(t, offsets[string(r.Value)], r.Offset, "v%d %s", v, r.Value)
		}
	}
}

// A queue deleted and recreated natively while this node's catalogue still
// holds the old listing: DeleteTopics by the old id must not resolve it to
// the name and delete the successor, since Queen deletes by name.
func TestDeleteTopicsByStaleIDSparesSuccessor(t *testing.T) {
	n, dq := newTestNode(t, nil)
	withClock(n) // the catalogue's TTL never runs out on its own
	old := uuid.MustParse(dq.addQueue("orders", 1))
	k := dial(t, serveTestNode(t, n))
	mr := k.roundTrip(metaReq(12, byID(old))).(*kmsg.MetadataResponse)
	require.EqualValues(t, 0, mr.Topics[0].ErrorCode, "the catalogue holds the old queue")

	_, err := dq.q.DeleteQueue(t.Context(), "orders")
	require.NoError(t, err)
	successor := dq.addQueue("orders", 1)

	dr := k.roundTrip(deleteReq(6, kmsg.DeleteTopicsRequestTopic{TopicID: old})).(*kmsg.DeleteTopicsResponse)
	require.Equal(t, kerr.UnknownTopicID.Code, dr.Topics[0].ErrorCode)
	q := dq.queue("orders")
	require.NotNil(t, q, "the successor was deleted by its predecessor's id")
	require.Equal(t, successor, q.ID)
}
