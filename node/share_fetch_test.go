package node

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen/dev"
	"github.com/queen-mq/queen-kafka/sharefetch"
)

// shareMember is one share consumer speaking raw ShareFetch and
// ShareAcknowledge v2 on its own connection.
type shareMember struct {
	k     *kclient
	group string
	id    string
	topic [16]byte
	epoch int32
}

type ack struct {
	first, last int64
	typ         int8
}

func (m *shareMember) fetch(t *testing.T, epoch int32, acks ...ack) *kmsg.ShareFetchResponse {
	t.Helper()
	r := kmsg.NewPtrShareFetchRequest()
	r.Version, r.GroupID, r.MemberID, r.ShareSessionEpoch = 2, kmsg.StringPtr(m.group), kmsg.StringPtr(m.id), epoch
	r.MaxWaitMillis, r.MaxRecords, r.BatchSize = 0, 500, 500
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = m.topic
	rp := kmsg.NewShareFetchRequestTopicPartition()
	for _, a := range acks {
		rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{FirstOffset: a.first, LastOffset: a.last, AcknowledgeTypes: []int8{a.typ}})
	}
	rt.Partitions = append(rt.Partitions, rp)
	if epoch != -1 || len(acks) > 0 {
		r.Topics = append(r.Topics, rt)
	}
	return m.k.roundTrip(r).(*kmsg.ShareFetchResponse)
}

// next fetches at the session's next epoch, which must be accepted.
func (m *shareMember) next(t *testing.T, acks ...ack) *kmsg.ShareFetchResponseTopicPartition {
	t.Helper()
	resp := m.fetch(t, m.epoch, acks...)
	require.Zero(t, resp.ErrorCode, kerr.ErrorForCode(resp.ErrorCode))
	m.epoch++
	if len(resp.Topics) == 0 && m.epoch > 1 {
		return &kmsg.ShareFetchResponseTopicPartition{} // an incremental answer with nothing to say
	}
	require.Len(t, resp.Topics, 1)
	require.Len(t, resp.Topics[0].Partitions, 1)
	return &resp.Topics[0].Partitions[0]
}

func (m *shareMember) acknowledge(t *testing.T, epoch int32, acks ...ack) *kmsg.ShareAcknowledgeResponse {
	t.Helper()
	r := kmsg.NewPtrShareAcknowledgeRequest()
	r.Version, r.GroupID, r.MemberID, r.ShareSessionEpoch = 2, kmsg.StringPtr(m.group), kmsg.StringPtr(m.id), epoch
	rt := kmsg.NewShareAcknowledgeRequestTopic()
	rt.TopicID = m.topic
	rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
	for _, a := range acks {
		rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{FirstOffset: a.first, LastOffset: a.last, AcknowledgeTypes: []int8{a.typ}})
	}
	rt.Partitions = append(rt.Partitions, rp)
	r.Topics = append(r.Topics, rt)
	return m.k.roundTrip(r).(*kmsg.ShareAcknowledgeResponse)
}

// ackCode acknowledges at the session's next epoch and returns the
// partition's code.
func (m *shareMember) ackCode(t *testing.T, acks ...ack) int16 {
	t.Helper()
	resp := m.acknowledge(t, m.epoch, acks...)
	require.Zero(t, resp.ErrorCode, kerr.ErrorForCode(resp.ErrorCode))
	m.epoch++
	return resp.Topics[0].Partitions[0].ErrorCode
}

func acquired(p *kmsg.ShareFetchResponseTopicPartition) []ack {
	var out []ack
	for _, a := range p.AcquiredRecords {
		out = append(out, ack{a.FirstOffset, a.LastOffset, int8(a.DeliveryCount)})
	}
	return out
}

// shareTopic creates a one-partition topic and returns its id.
func shareTopic(t *testing.T, addr, topic string) [16]byte {
	ctx := t.Context()
	adm := newAdmin(newKgoClient(t, addr))
	require.NoError(t, adm.CreateTopic(ctx, 1, 1, topic))
	md, err := adm.Metadata(ctx, topic)
	require.NoError(t, err)
	return md.Topics[topic].ID
}

func produceShare(t *testing.T, addr, topic string, n int) {
	prod := newKgoClient(t, addr, kgo.DefaultProduceTopic(topic))
	for i := range n {
		require.NoError(t, prod.ProduceSync(t.Context(), &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}).FirstErr())
	}
}

const (
	ackAccept  = 1
	ackRelease = 2
	ackReject  = 3
)

// TestShareFetchOnTheWire drives two share consumers through raw
// ShareFetch/ShareAcknowledge v2: acquisition with AcquiredRecords and
// delivery counts, ACCEPT/RELEASE/REJECT, redelivery after a release and
// after a lock expiry (fake clock), acknowledging records not held, the
// session epochs, and a closing session releasing what its member holds.
func TestShareFetchOnTheWire(t *testing.T) {
	e, addr, _ := servedEnv(t, dev.Options{})
	clk := withClock(e.n)
	id := shareTopic(t, addr, "sf-wire")
	a := &shareMember{k: dial(t, addr), group: "sg", id: "member-a", topic: id}
	b := &shareMember{k: dial(t, addr), group: "sg", id: "member-b", topic: id}

	produceShare(t, addr, "sf-wire", 3) // before the share-partition exists: latest skips them
	p := a.next(t)
	require.Empty(t, p.AcquiredRecords, "share.auto.offset.reset latest starts at the log end")
	produceShare(t, addr, "sf-wire", 10) // offsets 3..12

	p = a.next(t)
	require.Zero(t, p.ErrorCode)
	require.Equal(t, []ack{{3, 12, 1}}, acquired(p))
	require.GreaterOrEqual(t, len(p.Records), 8)
	require.EqualValues(t, 3, binary.BigEndian.Uint64(p.Records), "the batch starts at the first acquired offset")

	// B finds nothing: every record is A's.
	require.Empty(t, b.next(t).AcquiredRecords)

	// A accepts 3..5, releases 6, rejects 7: B is given 6 again, counted.
	require.Zero(t, a.ackCode(t, ack{3, 5, ackAccept}, ack{6, 6, ackRelease}, ack{7, 7, ackReject}))
	require.Equal(t, []ack{{6, 6, 2}}, acquired(b.next(t)))

	// Acknowledging what one does not hold: INVALID_RECORD_STATE, nothing applied.
	require.Equal(t, kerr.InvalidRecordState.Code, a.ackCode(t, ack{6, 6, ackAccept}))
	require.Equal(t, kerr.InvalidRecordState.Code, a.ackCode(t, ack{7, 7, ackAccept}), "already rejected")
	require.Equal(t, kerr.InvalidRecordState.Code, b.ackCode(t, ack{8, 8, ackAccept}), "A's")

	// Piggy-backed on a fetch: A accepts 8..9.
	p = a.next(t, ack{8, 9, ackAccept})
	require.Zero(t, p.AcknowledgeErrorCode)

	// Locks end after 30 s: A's 10..12 and B's 6 are delivered again.
	clk.Advance(31 * time.Second)
	require.Equal(t, []ack{{6, 6, 3}, {10, 12, 2}}, acquired(b.next(t)))

	// Epochs.
	require.Equal(t, kerr.InvalidShareSessionEpoch.Code, a.fetch(t, a.epoch+5).ErrorCode)
	require.Equal(t, kerr.ShareSessionNotFound.Code, (&shareMember{k: a.k, group: "sg", id: "member-c", topic: id}).fetch(t, 1).ErrorCode)
	require.Equal(t, kerr.InvalidShareSessionEpoch.Code, a.acknowledge(t, 0, ack{10, 10, ackAccept}).ErrorCode)
	require.Equal(t, kerr.InvalidRequest.Code, a.fetch(t, 0, ack{10, 10, ackAccept}).ErrorCode, "a new session acknowledges nothing")
	require.Empty(t, a.next(t).AcquiredRecords, "the refused requests left A's session as it was")

	// B closes its session: what it holds is released at once.
	resp := b.fetch(t, -1)
	require.Zero(t, resp.ErrorCode)
	c := &shareMember{k: dial(t, addr), group: "sg", id: "member-c", topic: id}
	require.Equal(t, []ack{{6, 6, 4}, {10, 12, 3}}, acquired(c.next(t)))
	require.Equal(t, kerr.ShareSessionNotFound.Code, b.fetch(t, b.epoch).ErrorCode, "closed")

	// The metrics saw it.
	body := scrape(t, e.n)
	for _, want := range []string{"queen_kafka_share_acquired_records_total", `queen_kafka_share_deliveries_total{delivery_count="2"}`,
		`queen_kafka_share_acknowledgements_total{outcome="accept"}`, "queen_kafka_share_lock_expiries_total", "queen_kafka_share_archived_records_total"} {
		require.Contains(t, body, want)
	}
}

// scrape is the node's /metrics text.
func scrape(t *testing.T, n *Node) string {
	rec := httptest.NewRecorder()
	n.metrics.Handler().ServeHTTP(rec, httptest.NewRequestWithContext(context.Background(), "GET", "/metrics", nil))
	return rec.Body.String()
}

type fakeMembers map[string]int16

func (f fakeMembers) Member(_ context.Context, _ sharefetch.KV, _, member string) int16 {
	return f[member]
}

// TestShareFetchChecksMembersAndWaits: a member the group side does not
// know is refused with its code at the top level (ShareFetch and
// ShareAcknowledge alike), and a member with nothing to acquire waits up to
// max_wait_ms, woken by a record written meanwhile.
func TestShareFetchChecksMembersAndWaits(t *testing.T) {
	e, addr, _ := servedEnv(t, dev.Options{})
	e.n.shares = sharefetch.New(sharefetch.Config{Members: fakeMembers{"stranger": kerr.UnknownMemberID.Code}, Mem: e.n.fetchMem, Enc: e.n.batches})
	id := shareTopic(t, addr, "sf-wait")
	s := &shareMember{k: dial(t, addr), group: "sg", id: "stranger", topic: id}
	require.Equal(t, kerr.UnknownMemberID.Code, s.fetch(t, 0).ErrorCode)
	require.Equal(t, kerr.UnknownMemberID.Code, s.fetch(t, 3).ErrorCode)

	m := &shareMember{k: dial(t, addr), group: "sg", id: "member", topic: id}
	m.next(t)
	r := kmsg.NewPtrShareFetchRequest()
	r.Version, r.GroupID, r.MemberID, r.ShareSessionEpoch = 2, kmsg.StringPtr("sg"), kmsg.StringPtr("member"), 1
	r.MaxWaitMillis, r.MaxRecords = 20_000, 10
	r.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: id, Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: 0}}}}
	done := make(chan *kmsg.ShareFetchResponse, 1)
	start := time.Now()
	go func() { done <- m.k.roundTrip(r).(*kmsg.ShareFetchResponse) }()
	time.Sleep(300 * time.Millisecond)
	produceShare(t, addr, "sf-wait", 1)
	resp := <-done
	require.Less(t, time.Since(start), 15*time.Second, "woken by the write, not by max_wait_ms")
	require.Zero(t, resp.ErrorCode)
	require.Len(t, resp.Topics, 1)
	require.Equal(t, []ack{{0, 0, 1}}, acquired(&resp.Topics[0].Partitions[0]))
}

// TestShareRenewOnTheWire: ShareAcknowledge v2 with is_renew_ack restarts
// a held record's lock (KIP-1222); a RENEW without the flag is
// INVALID_REQUEST and changes nothing.
func TestShareRenewOnTheWire(t *testing.T) {
	e, addr, _ := servedEnv(t, dev.Options{})
	clk := withClock(e.n)
	id := shareTopic(t, addr, "sf-renew")
	a := &shareMember{k: dial(t, addr), group: "sr", id: "a", topic: id}
	b := &shareMember{k: dial(t, addr), group: "sr", id: "b", topic: id}
	a.next(t)
	b.next(t)
	produceShare(t, addr, "sf-renew", 2)
	require.Equal(t, []ack{{0, 1, 1}}, acquired(a.next(t)))

	renew := func(flag bool) int16 {
		r := kmsg.NewPtrShareAcknowledgeRequest()
		r.Version, r.GroupID, r.MemberID, r.ShareSessionEpoch, r.IsRenewAck = 2, kmsg.StringPtr("sr"), kmsg.StringPtr("a"), a.epoch, flag
		r.Topics = []kmsg.ShareAcknowledgeRequestTopic{{TopicID: id, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{{
			AcknowledgementBatches: []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 0, AcknowledgeTypes: []int8{4}}}}}}}
		resp := a.k.roundTrip(r).(*kmsg.ShareAcknowledgeResponse)
		require.Zero(t, resp.ErrorCode)
		require.EqualValues(t, 30_000, resp.AcquisitionLockTimeoutMillis)
		a.epoch++
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	clk.Advance(20 * time.Second)
	require.Equal(t, kerr.InvalidRequest.Code, renew(false))
	require.Zero(t, renew(true))
	clk.Advance(11 * time.Second) // 31 s after the acquisition: 1's lock ended, 0's was renewed
	require.Equal(t, []ack{{1, 1, 2}}, acquired(b.next(t)))
	clk.Advance(20 * time.Second)
	require.Equal(t, []ack{{0, 0, 2}}, acquired(b.next(t)))
}

// TestShareFetchRefusesPartitions: a topic id no topic has is
// UNKNOWN_TOPIC_ID, a partition the topic lacks UNKNOWN_TOPIC_OR_PARTITION,
// each on its own partition (acknowledgements included) while the others
// are served.
func TestShareFetchRefusesPartitions(t *testing.T) {
	_, addr, _ := servedEnv(t, dev.Options{})
	id := shareTopic(t, addr, "sf-refuse")
	k := dial(t, addr)
	r := kmsg.NewPtrShareFetchRequest()
	r.Version, r.GroupID, r.MemberID = 2, kmsg.StringPtr("sg"), kmsg.StringPtr("m")
	r.Topics = []kmsg.ShareFetchRequestTopic{
		{TopicID: id, Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: 0}, {Partition: 7}}},
		{TopicID: [16]byte{9, 9}, Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: 0}}},
	}
	resp := k.roundTrip(r).(*kmsg.ShareFetchResponse)
	require.Zero(t, resp.ErrorCode)
	codes := map[int32]int16{}
	for _, st := range resp.Topics {
		for _, sp := range st.Partitions {
			if st.TopicID == id {
				codes[sp.Partition] = sp.ErrorCode
			} else {
				codes[-1] = sp.ErrorCode
			}
		}
	}
	require.Equal(t, map[int32]int16{0: 0, 7: kerr.UnknownTopicOrPartition.Code, -1: kerr.UnknownTopicID.Code}, codes)

	a := kmsg.NewPtrShareAcknowledgeRequest()
	a.Version, a.GroupID, a.MemberID, a.ShareSessionEpoch = 2, kmsg.StringPtr("sg"), kmsg.StringPtr("m"), 1
	a.Topics = []kmsg.ShareAcknowledgeRequestTopic{{TopicID: [16]byte{9, 9}, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{{
		AcknowledgementBatches: []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 0, AcknowledgeTypes: []int8{1}}}}}}}
	ar := k.roundTrip(a).(*kmsg.ShareAcknowledgeResponse)
	require.Zero(t, ar.ErrorCode)
	require.Equal(t, kerr.UnknownTopicID.Code, ar.Topics[0].Partitions[0].ErrorCode)

	// Piggy-backed on a ShareFetch: the partition's acknowledge_error_code.
	f := kmsg.NewPtrShareFetchRequest()
	f.Version, f.GroupID, f.MemberID, f.ShareSessionEpoch = 2, kmsg.StringPtr("sg"), kmsg.StringPtr("m"), 2
	f.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: [16]byte{9, 9}, Partitions: []kmsg.ShareFetchRequestTopicPartition{{
		AcknowledgementBatches: []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 0, AcknowledgeTypes: []int8{1}}}}}}}
	fr := k.roundTrip(f).(*kmsg.ShareFetchResponse)
	require.Zero(t, fr.ErrorCode)
	var ackCode int16
	for _, st := range fr.Topics {
		if st.TopicID == [16]byte{9, 9} {
			ackCode = st.Partitions[0].AcknowledgeErrorCode
		}
	}
	require.Equal(t, kerr.UnknownTopicID.Code, ackCode)
}
