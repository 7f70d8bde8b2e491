package txn

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/coordinator"
)

// staticGroup is a coordinator over the harness's broker and, in it, group
// "etl" formed by one static member with instance id "etl-1" (no join
// delay: the first join completes at once). It returns the member id and
// the generation.
func staticGroup(t *testing.T, h *harness) (*coordinator.Coordinator, string, int32) {
	t.Helper()
	c := coordinator.New(coordinator.Config{KV: h.q, MinSessionTimeout: 6 * time.Second, MaxSessionTimeout: 300 * time.Second, Log: slog.New(slog.DiscardHandler)})
	j := staticJoin(c, "")
	if j.ErrorCode != 0 {
		t.Fatalf("static JoinGroup: %v", kerr.ErrorForCode(j.ErrorCode))
	}
	s := kmsg.NewPtrSyncGroupRequest()
	s.Version = 5
	s.Group, s.MemberID, s.Generation, s.InstanceID = "etl", j.MemberID, j.Generation, kmsg.StringPtr("etl-1")
	s.ProtocolType, s.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	a := kmsg.NewSyncGroupRequestGroupAssignment()
	a.MemberID, a.MemberAssignment = j.MemberID, []byte("in-0")
	s.GroupAssignment = append(s.GroupAssignment, a)
	if code := c.SyncGroup(context.Background(), coordinator.Client{}, s).ErrorCode; code != 0 {
		t.Fatalf("SyncGroup: %v", kerr.ErrorForCode(code))
	}
	return c, j.MemberID, j.Generation
}

// staticJoin is a JoinGroup v5 of instance "etl-1" in group "etl"; member
// "" is the consumer starting (or restarting).
func staticJoin(c *coordinator.Coordinator, member string) *kmsg.JoinGroupResponse {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version = 5
	r.Group, r.MemberID, r.InstanceID = "etl", member, kmsg.StringPtr("etl-1")
	r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = 30_000, 30_000
	r.ProtocolType = "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name = "range"
	m := kmsg.NewConsumerMemberMetadata()
	m.Topics = []string{"in"}
	p.Metadata = m.AppendTo(nil)
	r.Protocols = append(r.Protocols, p)
	return c.JoinGroup(context.Background(), coordinator.Client{}, r)
}

// TestTxnOffsetCommitOfAStaticMember: a static member's TxnOffsetCommit v3
// (KIP-447 with group.instance.id) is checked by the group as Kafka's
// ClassicGroup.validateOffsetCommit checks it, the rule OffsetCommit v7
// follows: the instance's current member id in the current generation is
// accepted, a member id the instance was rejoined under since is
// FENCED_INSTANCE_ID, an instance the group does not know is
// UNKNOWN_MEMBER_ID, another generation is ILLEGAL_GENERATION. (Issue 20:
// every static member's commit was UNKNOWN_MEMBER_ID, so a static
// consume-transform-produce loop aborted every transaction.)
func TestTxnOffsetCommitOfAStaticMember(t *testing.T) {
	h := newHarness(t, Limits{})
	c, first, gen := staticGroup(t, h)
	m := New(Config{Queen: h.wire, IDs: h.ids, Groups: c, Clock: h.clock, Log: slog.New(slog.DiscardHandler), Fault: testFault})
	pid, epoch := h.init(m, h.cl, "tx")

	// txnCommit and commit are the same member's commit of offset, as
	// TxnOffsetCommit (partition in/0, staged) and as OffsetCommit
	// (partition plain/0, written at once).
	txnCommit := func(member, instance string, gen int32, offset int64) int16 {
		r := offsetCommit("tx", pid, epoch, "etl", "in", map[int32]int64{0: offset})
		r.MemberID, r.InstanceID, r.Generation = member, kmsg.StringPtr(instance), gen
		return offsetCodes(m.TxnOffsetCommit(bg, h.cl, r, served))[0]
	}
	commit := func(member, instance string, gen int32, offset int64) int16 {
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Version = 7
		r.Group, r.MemberID, r.InstanceID, r.Generation = "etl", member, kmsg.StringPtr(instance), gen
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "plain"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Offset = offset
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		return c.OffsetCommit(bg, coordinator.Client{}, r).Topics[0].Partitions[0].ErrorCode
	}
	check := func(what, member, instance string, gen int32, offset int64, want int16) {
		t.Helper()
		if got := txnCommit(member, instance, gen, offset); got != want {
			t.Fatalf("%s: TxnOffsetCommit %v, want %v", what, kerr.ErrorForCode(got), kerr.ErrorForCode(want))
		}
		if got := commit(member, instance, gen, offset); got != want {
			t.Fatalf("%s: OffsetCommit %v, want %v (as TxnOffsetCommit)", what, kerr.ErrorForCode(got), kerr.ErrorForCode(want))
		}
	}

	check("the static member", first, "etl-1", gen, 5, 0)

	// The consumer restarts: the same instance id joins with no member id
	// and takes the place of the first, in the same generation.
	j := staticJoin(c, "")
	if j.ErrorCode != 0 || j.MemberID == first || j.Generation != gen {
		t.Fatalf("static rejoin: %v, member %q (was %q), generation %d (was %d)", kerr.ErrorForCode(j.ErrorCode), j.MemberID, first, j.Generation, gen)
	}
	second := j.MemberID

	check("the replaced member id", first, "etl-1", gen, 6, kerr.FencedInstanceID.Code)
	check("an instance the group does not know", second, "etl-2", gen, 6, kerr.UnknownMemberID.Code)
	check("another generation", second, "etl-1", gen+1, 6, kerr.IllegalGeneration.Code)
	check("the member the instance rejoined as", second, "etl-1", gen, 7, 0)

	if code := h.end(m, h.cl, "tx", pid, epoch, true); code != 0 {
		t.Fatalf("EndTxn(commit): %v", kerr.ErrorForCode(code))
	}
	if got := h.committed("etl", "in", 0); got != 7 {
		t.Fatalf("committed offset %d, want 7 (the last accepted commit)", got)
	}
}
