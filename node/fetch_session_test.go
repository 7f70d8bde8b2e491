package node

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/queen-mq/queen-kafka/fetchsession"
	"github.com/queen-mq/queen-kafka/queen/dev"
	"github.com/queen-mq/queen-kafka/recordbatch"
	"github.com/queen-mq/queen-kafka/recordbatch/batchtest"
)

// sessionReq is a fetch request of a session (id, epoch), waiting nothing.
func sessionReq(version int16, id, epoch int32, parts ...fetchPart) *kmsg.FetchRequest {
	req := fetchReq(version, 0, 0, 1<<20, parts...)
	req.SessionID, req.SessionEpoch = id, epoch
	return req
}

// answered is what a fetch answer carries: "topic/partition" -> records.
func answered(t *testing.T, resp *kmsg.FetchResponse) map[string]int {
	t.Helper()
	got := map[string]int{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			require.Zero(t, rp.ErrorCode, "%s/%d", rt.Topic, rp.Partition)
			n, _ := batchRecords(rp.RecordBatches)
			got[fmt.Sprintf("%s/%d", rt.Topic, rp.Partition)] = n
		}
	}
	return got
}

func oneRecord(t *testing.T, v string) []byte {
	return batchtest.Batch{Codec: recordbatch.CodecNone, FirstTS: 1787824800123, Records: []kmsg.Record{{Value: []byte(v)}}}.Encode(t)
}

// TestFetchSessionProtocol drives KIP-227 at the boundary versions, raw: a
// full fetch opens a session; an incremental one carries only what moved;
// forgotten partitions leave; a replayed or skipped epoch is
// INVALID_FETCH_SESSION_EPOCH, an unknown id FETCH_SESSION_ID_NOT_FOUND,
// each alone with session id 0; a sessionless fetch (0, -1) still answers
// every partition; a closed session is gone.
func TestFetchSessionProtocol(t *testing.T) {
	for _, v := range []int16{7, 12} {
		t.Run(fmt.Sprint("v", v), func(t *testing.T) {
			e := newDataEnv(t, dev.Options{}, nil)
			e.createTopic("s")
			for p := int32(0); p < 3; p++ {
				e.produce("s", p, oneRecord(t, "first"))
			}
			all := []fetchPart{{"s", 0, 0, 1 << 20}, {"s", 1, 0, 1 << 20}, {"s", 2, 0, 1 << 20}}

			full := e.fetch(sessionReq(v, 0, 0, all...))
			require.Zero(t, full.ErrorCode)
			id := full.SessionID
			require.Positive(t, id, "a full fetch opens a session")
			require.Equal(t, map[string]int{"s/0": 1, "s/1": 1, "s/2": 1}, answered(t, full))

			// The client's offsets moved; nothing new: an empty answer.
			moved := []fetchPart{{"s", 0, 1, 1 << 20}, {"s", 1, 1, 1 << 20}, {"s", 2, 1, 1 << 20}}
			inc := e.fetch(sessionReq(v, id, 1, moved...))
			require.Zero(t, inc.ErrorCode)
			require.Equal(t, id, inc.SessionID)
			require.Empty(t, inc.Topics, "nothing moved: nothing carried")

			// One record in s/1: only s/1, from the offset the session holds.
			e.produce("s", 1, oneRecord(t, "second"))
			inc = e.fetch(sessionReq(v, id, 2))
			require.Equal(t, map[string]int{"s/1": 1}, answered(t, inc))
			require.Equal(t, int64(2), inc.Topics[0].Partitions[0].HighWatermark)

			// s/2 forgotten: its record is not carried, s/0's is.
			e.produce("s", 2, oneRecord(t, "third"))
			e.produce("s", 0, oneRecord(t, "fourth"))
			req := sessionReq(v, id, 3, fetchPart{"s", 1, 2, 1 << 20})
			ft := kmsg.NewFetchRequestForgottenTopic()
			ft.Topic, ft.Partitions = "s", []int32{2}
			req.ForgottenTopics = append(req.ForgottenTopics, ft)
			inc = e.fetch(req)
			require.Equal(t, map[string]int{"s/0": 1}, answered(t, inc))

			for _, c := range []struct {
				id, epoch int32
				code      int16
			}{
				{id, 3, kerr.InvalidFetchSessionEpoch.Code},   // replayed
				{id, 9, kerr.InvalidFetchSessionEpoch.Code},   // skipped
				{id + 1, 4, kerr.FetchSessionIDNotFound.Code}, // unknown
			} {
				bad := e.fetch(sessionReq(v, c.id, c.epoch, all...))
				require.Equal(t, c.code, bad.ErrorCode)
				require.Zero(t, bad.SessionID)
				require.Empty(t, bad.Topics, "a session refusal is answered alone")
			}

			// Sessionless still answers every partition, and opens nothing.
			less := e.fetch(sessionReq(v, 0, -1, all...))
			require.Zero(t, less.ErrorCode)
			require.Zero(t, less.SessionID)
			require.Equal(t, map[string]int{"s/0": 2, "s/1": 2, "s/2": 2}, answered(t, less))

			// The session survived all of that at epoch 4; closing it ends it.
			require.Zero(t, e.fetch(sessionReq(v, id, 4)).ErrorCode)
			e.fetch(sessionReq(v, id, -1, all...))
			require.Equal(t, kerr.FetchSessionIDNotFound.Code, e.fetch(sessionReq(v, id, 5)).ErrorCode)

			st := e.n.sessions.Stats()
			require.Zero(t, st.Sessions)
			require.Equal(t, uint64(1), st.Full)
			require.Equal(t, uint64(4), st.Incremental)
			require.Equal(t, uint64(2), st.Sessionless)
			require.Equal(t, uint64(2), st.InvalidEpoch)
			require.Equal(t, uint64(2), st.NotFound)
		})
	}
}

// TestFetchSessionCarriesErrorsAndBoundsChanges: an incremental answer
// carries a partition whose error or log start changed, and a partition
// that keeps failing every time (an unknown partition in the session).
func TestFetchSessionCarriesErrorsAndBoundsChanges(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, nil)
	e.createTopic("s")
	e.produce("s", 0, oneRecord(t, "a"))
	full := e.fetch(sessionReq(12, 0, 0, fetchPart{"s", 0, 1, 1 << 20}, fetchPart{"s", 77, 0, 1 << 20}))
	id := full.SessionID
	require.Positive(t, id)
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, full.Topics[0].Partitions[1].ErrorCode)

	for epoch := int32(1); epoch <= 2; epoch++ {
		inc := e.fetch(sessionReq(12, id, epoch))
		require.Len(t, inc.Topics, 1)
		require.Len(t, inc.Topics[0].Partitions, 1, "the failing partition, every time; s/0 has not moved")
		require.Equal(t, int32(77), inc.Topics[0].Partitions[0].Partition)
		require.Equal(t, kerr.UnknownTopicOrPartition.Code, inc.Topics[0].Partitions[0].ErrorCode)
	}

	// s/0 asked past its end: OFFSET_OUT_OF_RANGE is carried, then its
	// return to a valid offset is carried too (the error is gone).
	codes := func(resp *kmsg.FetchResponse) map[int32]int16 {
		require.Len(t, resp.Topics, 1)
		m := map[int32]int16{}
		for _, p := range resp.Topics[0].Partitions {
			m[p.Partition] = p.ErrorCode
		}
		return m
	}
	inc := e.fetch(sessionReq(12, id, 3, fetchPart{"s", 0, 50, 1 << 20}))
	require.Equal(t, map[int32]int16{0: kerr.OffsetOutOfRange.Code, 77: kerr.UnknownTopicOrPartition.Code}, codes(inc))
	inc = e.fetch(sessionReq(12, id, 4, fetchPart{"s", 0, 1, 1 << 20}))
	require.Equal(t, map[int32]int16{0: 0, 77: kerr.UnknownTopicOrPartition.Code}, codes(inc))
}

// TestFetchSessionEviction: with every slot taken by young sessions a full
// fetch is answered without a session (id 0); once one is stale it is
// evicted for the newcomer, its client is answered
// FETCH_SESSION_ID_NOT_FOUND, and the metrics say so.
func TestFetchSessionEviction(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, nil)
	now := time.Unix(1_800_000_000, 0)
	e.n.sessions = fetchsession.New(fetchsession.Config{Slots: 2, EvictAfter: time.Minute, Now: func() time.Time { return now }})
	e.createTopic("s")
	e.produce("s", 0, oneRecord(t, "a"))
	p := fetchPart{"s", 0, 0, 1 << 20}

	a := e.fetch(sessionReq(12, 0, 0, p)).SessionID
	b := e.fetch(sessionReq(12, 0, 0, p)).SessionID
	require.Positive(t, a)
	require.Positive(t, b)
	c := e.fetch(sessionReq(12, 0, 0, p))
	require.Zero(t, c.SessionID, "no slot: answered without a session")
	require.Equal(t, map[string]int{"s/0": 1}, answered(t, c))

	now = now.Add(30 * time.Second)
	require.Zero(t, e.fetch(sessionReq(12, b, 1)).ErrorCode)
	now = now.Add(31 * time.Second) // a unused for 61 s: stale
	d := e.fetch(sessionReq(12, 0, 0, p)).SessionID
	require.Positive(t, d)
	require.Equal(t, kerr.FetchSessionIDNotFound.Code, e.fetch(sessionReq(12, a, 1)).ErrorCode, "a was evicted")
	require.Zero(t, e.fetch(sessionReq(12, b, 2)).ErrorCode, "b was not")

	snap := e.n.snapshot().FetchSessions
	require.Equal(t, 2, snap.Sessions)
	require.Equal(t, 2, snap.Partitions)
	require.Equal(t, uint64(1), snap.Evictions)
	require.Equal(t, uint64(1), snap.NotFound)
}

// TestFetchSessionGoneAfterRestart: a node restarted over the same Queen
// has no sessions: the old id is FETCH_SESSION_ID_NOT_FOUND, and a full
// fetch opens a new one there.
func TestFetchSessionGoneAfterRestart(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, nil)
	e.createTopic("s")
	e.produce("s", 0, oneRecord(t, "a"))
	p := fetchPart{"s", 0, 0, 1 << 20}
	id := e.fetch(sessionReq(12, 0, 0, p)).SessionID
	require.Positive(t, id)

	restarted := e.node(nil)
	c := e.conn(restarted)
	fetch := func(req *kmsg.FetchRequest) *kmsg.FetchResponse {
		resp, err := restarted.handleFetch(context.Background(), c, req)
		require.NoError(t, err)
		return resp.(*kmsg.FetchResponse)
	}
	require.Equal(t, kerr.FetchSessionIDNotFound.Code, fetch(sessionReq(12, id, 1)).ErrorCode)
	again := fetch(sessionReq(12, id, 0, p))
	require.Positive(t, again.SessionID)
	require.Equal(t, map[string]int{"s/0": 1}, answered(t, again))
}

// fetchVersions pins the highest Fetch version a franz-go client uses.
func fetchVersions(v int16) *kversion.Versions {
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(kmsg.Fetch.Int16(), v)
	return vs
}

// TestKgoConsumerAtEachFetchVersion: franz-go, which uses fetch sessions
// whenever the version allows, pinned at every Fetch version we answer (4-18,
// topic ids from v13),
// consumes a trickle over three partitions exactly once and in order; from
// v7 it does so over one session (full once, then incremental), below v7
// without one.
func TestKgoConsumerAtEachFetchVersion(t *testing.T) {
	addr, env := fixedAddrEnv(t, nil)
	e := newDataEnv(t, dev.Options{}, env)
	obs := &versionObserver{Observer: e.n.obs, versions: map[int16]int{}}
	e.n.obs = obs
	serveTestNode(t, e.n)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(), kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer prod.Close()
	// The producer's connections are opened before the loop, so that the
	// node's connection count, back at its value from before a consumer,
	// says that consumer's last fetches were answered and observed: a
	// fetch parked at Close is otherwise counted in the next version's
	// window.
	e.createTopic("kgo-fetch-warmup")
	require.NoError(t, prod.ProduceSync(ctx, &kgo.Record{Topic: "kgo-fetch-warmup", Value: []byte("w")}).FirstErr())
	conns := func() int {
		e.n.mu.Lock()
		defer e.n.mu.Unlock()
		return e.n.srv.Connections()
	}

	for v := int16(4); v <= 18; v++ {
		topic := fmt.Sprint("kgo-fetch-v", v)
		e.createTopic(topic) // before the consumer, which would see it missing
		before := e.n.sessions.Stats()
		baseConns := conns()
		cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.MaxVersions(fetchVersions(v)),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart(), 2: kgo.NewOffset().AtStart()}}),
			kgo.FetchMaxWait(200*time.Millisecond), kgo.MetadataMinAge(100*time.Millisecond))
		require.NoError(t, err)
		want := map[int32][]string{}
		got := map[int32][]string{}
		for round := 0; round < 5; round++ {
			for p := int32(0); p < 3; p++ {
				val := fmt.Sprintf("v%d-r%d-p%d", v, round, p)
				if (int(p)+round)%2 == 0 {
					continue // a trickle: not every partition every round
				}
				want[p] = append(want[p], val)
				require.NoError(t, prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte(val)}).FirstErr())
			}
			for total(got) < total(want) && ctx.Err() == nil {
				fs := cons.PollFetches(ctx)
				require.Empty(t, fs.Errors(), "v%d: %v", v, fs.Errors())
				fs.EachRecord(func(r *kgo.Record) { got[r.Partition] = append(got[r.Partition], string(r.Value)) })
			}
		}
		cons.Close()
		require.Eventually(t, func() bool { return conns() <= baseConns }, 30*time.Second, 5*time.Millisecond,
			"v%d: the consumer's connections closed on the node", v)
		require.Equal(t, want, got, "v%d: every record once, in order", v)
		versions := obs.take()
		require.Positive(t, versions[v], "v%d: fetches at the pinned version", v)
		require.Len(t, versions, 1, "v%d: at the pinned version only: %v", v, versions)
		after := e.n.sessions.Stats()
		if v >= 7 {
			require.GreaterOrEqual(t, after.Full-before.Full, uint64(1), "v%d", v)
			require.Greater(t, after.Incremental-before.Incremental, after.Full-before.Full, "v%d: incremental fetches, mostly", v)
		} else {
			require.Equal(t, before.Full, after.Full, "v%d", v)
			require.Equal(t, before.Incremental, after.Incremental, "v%d", v)
			require.Greater(t, after.Sessionless, before.Sessionless, "v%d", v)
		}
	}
}

func total(m map[int32][]string) int {
	n := 0
	for _, v := range m {
		n += len(v)
	}
	return n
}

// versionObserver records the versions of the Fetch requests answered.
type versionObserver struct {
	Observer
	mu       sync.Mutex
	versions map[int16]int
}

func (o *versionObserver) Request(key, version, code int16, bytes int, throttle, took time.Duration) {
	if key == kmsg.Fetch.Int16() {
		o.mu.Lock()
		o.versions[version]++
		o.mu.Unlock()
	}
	o.Observer.Request(key, version, code, bytes, throttle, took)
}

func (o *versionObserver) take() map[int16]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	v := o.versions
	o.versions = map[int16]int{}
	return v
}

// TestKgoPausedPartitionIsForgotten: franz-go leaves a paused partition out
// of its next fetch as a forgotten partition (KIP-227's
// forgotten_topics_data), and adds it back on resume: the session on the
// node follows, without a new full fetch.
func TestKgoPausedPartitionIsForgotten(t *testing.T) {
	addr, env := fixedAddrEnv(t, nil)
	e := newDataEnv(t, dev.Options{}, env)
	serveTestNode(t, e.n)
	e.createTopic("paused")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.FetchMaxWait(100*time.Millisecond),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"paused": {0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart(), 2: kgo.NewOffset().AtStart()}}))
	require.NoError(t, err)
	defer cons.Close()
	go func() {
		for ctx.Err() == nil {
			cons.PollFetches(ctx)
		}
	}()
	waitSession := func(what string, partitions int) {
		t.Helper()
		require.Eventually(t, func() bool {
			st := e.n.sessions.Stats()
			return st.Sessions == 1 && st.Partitions == partitions
		}, 20*time.Second, 20*time.Millisecond, what)
	}
	waitSession("three partitions in the session", 3)
	full := e.n.sessions.Stats().Full
	cons.PauseFetchPartitions(map[string][]int32{"paused": {2}})
	waitSession("the paused partition forgotten", 2)
	cons.ResumeFetchPartitions(map[string][]int32{"paused": {2}})
	waitSession("the resumed partition back", 3)
	require.Equal(t, full, e.n.sessions.Stats().Full, "no new full fetch: the session was updated incrementally")
}

// topicID is topic's id in e's catalogue, refreshed.
func (e *dataEnv) topicID(topic string) [16]byte {
	e.t.Helper()
	cat := e.n.cats.For(callerOf(e.c))
	require.NoError(e.t, cat.Ensure(context.Background(), callerOf(e.c), true))
	id, ok := cat.TopicID(topic)
	require.True(e.t, ok, "%s has an id", topic)
	return id
}

// byIDReq is sessionReq at v13+: every topic named by id (ids maps names).
func byIDReq(version int16, id, epoch int32, ids map[string][16]byte, parts ...fetchPart) *kmsg.FetchRequest {
	req := sessionReq(version, id, epoch, parts...)
	for i := range req.Topics {
		req.Topics[i].TopicID = ids[req.Topics[i].Topic]
		req.Topics[i].Topic = ""
	}
	return req
}

// answeredByID is answered for a v13+ answer, topics named back by ids.
func answeredByID(t *testing.T, resp *kmsg.FetchResponse, ids map[string][16]byte) map[string]int {
	t.Helper()
	names := map[[16]byte]string{}
	for n, id := range ids {
		names[id] = n
	}
	for i := range resp.Topics {
		require.Empty(t, resp.Topics[i].Topic, "v13+ answers by id alone")
		resp.Topics[i].Topic = names[resp.Topics[i].TopicID]
	}
	return answered(t, resp)
}

// TestFetchSessionByTopicID: Fetch v13 and v18 name topics by id, in the
// request, the forgotten topics, the answer and the session. An unknown id
// is UNKNOWN_TOPIC_ID for its partitions (answered every fetch of the
// session); a session opened by name cannot be fetched by id, nor one
// opened by id by name (FETCH_SESSION_TOPIC_ID_ERROR).
func TestFetchSessionByTopicID(t *testing.T) {
	for _, v := range []int16{13, 18} {
		t.Run(fmt.Sprint("v", v), func(t *testing.T) {
			e := newDataEnv(t, dev.Options{}, nil)
			e.createTopic("a")
			e.createTopic("b")
			e.produce("a", 0, oneRecord(t, "a0"))
			e.produce("b", 1, oneRecord(t, "b1"))
			ids := map[string][16]byte{"a": e.topicID("a"), "b": e.topicID("b"), "gone": {9, 9, 9}}

			full := e.fetch(byIDReq(v, 0, 0, ids, fetchPart{"a", 0, 0, 1 << 20}, fetchPart{"b", 1, 0, 1 << 20}, fetchPart{"gone", 0, 0, 1 << 20}))
			id := full.SessionID
			require.Positive(t, id)
			require.Len(t, full.Topics, 3)
			require.Equal(t, ids["gone"], full.Topics[2].TopicID)
			require.Equal(t, kerr.UnknownTopicID.Code, full.Topics[2].Partitions[0].ErrorCode)
			full.Topics = full.Topics[:2]
			require.Equal(t, map[string]int{"a/0": 1, "b/1": 1}, answeredByID(t, full, ids))

			// Forget the unknown id; a record in b/1 is all that is carried.
			e.produce("b", 1, oneRecord(t, "b1-second"))
			req := byIDReq(v, id, 1, ids, fetchPart{"a", 0, 1, 1 << 20}, fetchPart{"b", 1, 1, 1 << 20})
			ft := kmsg.NewFetchRequestForgottenTopic()
			ft.TopicID, ft.Partitions = ids["gone"], []int32{0}
			req.ForgottenTopics = append(req.ForgottenTopics, ft)
			inc := e.fetch(req)
			require.Zero(t, inc.ErrorCode)
			require.Equal(t, map[string]int{"b/1": 1}, answeredByID(t, inc, ids))

			// By name against a session by id, and the other way round.
			require.Equal(t, kerr.FetchSessionTopicIDError.Code, e.fetch(sessionReq(12, id, 2)).ErrorCode)
			named := e.fetch(sessionReq(12, 0, 0, fetchPart{"a", 0, 0, 1 << 20})).SessionID
			require.Positive(t, named)
			require.Equal(t, kerr.FetchSessionTopicIDError.Code, e.fetch(byIDReq(v, named, 1, ids)).ErrorCode)
			require.Zero(t, e.fetch(byIDReq(v, id, 2, ids)).ErrorCode, "the id session is still at epoch 2")
		})
	}
}
