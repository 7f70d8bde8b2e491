package coordinator

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeConsumer is a consumer side holding one group, "cg", with one
// member "m" at epoch 3 subscribed to "orders".
type fakeConsumer struct{ members bool }

func (f *fakeConsumer) Holds(_ context.Context, _ string, _ KV, id string) (bool, bool, int16) {
	return id == "cg", f.members, 0
}
func (f *fakeConsumer) DeleteEmpty(context.Context, string, KV, string) (bool, int16) {
	if f.members {
		return false, kerr.NonEmptyGroup.Code
	}
	return true, 0
}
func (f *fakeConsumer) List(context.Context, string, KV, []string, []string) ([]kmsg.ListGroupsResponseGroup, int16) {
	g := kmsg.NewListGroupsResponseGroup()
	g.Group, g.GroupType, g.ProtocolType, g.GroupState = "cg", "consumer", "consumer", "Stable"
	return []kmsg.ListGroupsResponseGroup{g}, 0
}
func (f *fakeConsumer) ValidateCommit(_ context.Context, _ string, _ KV, group, member string, epoch int32, _ bool, _ int16) (bool, int16) {
	switch {
	case group != "cg":
		return false, 0
	case member != "m":
		return true, kerr.UnknownMemberID.Code
	case epoch != 3:
		return true, kerr.StaleMemberEpoch.Code
	}
	return true, 0
}
func (f *fakeConsumer) ValidateFetch(context.Context, string, KV, string, *string, int32) (bool, int16) {
	return false, 0
}
func (f *fakeConsumer) Subscribed(_ context.Context, _ string, _ KV, group string) (bool, map[string]bool, int16) {
	return group == "cg", map[string]bool{"orders": true}, 0
}

// TestConsumerGroupsSeam: the classic coordinator's answers for a group
// the consumer side holds, as Kafka answers them.
func TestConsumerGroupsSeam(t *testing.T) {
	f := &fakeConsumer{members: true}
	h := newHarness(t, func(c *Config) { c.Consumer = f })
	// TxnOffsetCommit: a stale member epoch is ILLEGAL_GENERATION below
	// v6 and STALE_MEMBER_EPOCH from v6 (KIP-1319), no member named is
	// accepted, an unknown member refused.
	if code, pt := h.c.TxnCommitCheck(h.cl, "cg", "m", nil, 2, 5); code != kerr.IllegalGeneration.Code || pt != "consumer" {
		t.Fatalf("stale txn commit: %d %q", code, pt)
	}
	if code, pt := h.c.TxnCommitCheck(h.cl, "cg", "m", nil, 2, 6); code != kerr.StaleMemberEpoch.Code || pt != "consumer" {
		t.Fatalf("stale txn commit v6: %d %q", code, pt)
	}
	if code, _ := h.c.TxnCommitCheck(h.cl, "cg", "m", nil, 3, 5); code != 0 {
		t.Fatalf("current txn commit: %d", code)
	}
	if code, _ := h.c.TxnCommitCheck(h.cl, "cg", "", nil, -1, 5); code != 0 {
		t.Fatalf("memberless txn commit: %d", code)
	}
	if code, _ := h.c.TxnCommitCheck(h.cl, "cg", "x", nil, 3, 5); code != kerr.UnknownMemberID.Code {
		t.Fatalf("unknown member txn commit: %d", code)
	}
	// OffsetCommit: the consumer side decides, the classic rules do not
	// apply (no classic group exists to be ILLEGAL_GENERATION).
	if codes := h.commit(commitReq("cg", "m", 3, "orders", map[int32]int64{0: 5})); codes[0] != 0 {
		t.Fatalf("commit: %v", codes)
	}
	if codes := h.commit(commitReq("cg", "m", 1, "orders", map[int32]int64{0: 5})); codes[0] != kerr.StaleMemberEpoch.Code {
		t.Fatalf("stale commit: %v", codes)
	}
	// JoinGroup on a consumer group with members.
	if r := h.c.JoinGroup(context.Background(), h.cl, joinReq(5, "cg", "", "range")); r.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("join: %d", r.ErrorCode)
	}
	// OffsetDelete of a subscribed topic.
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "cg"
	ot := kmsg.NewOffsetDeleteRequestTopic()
	ot.Topic = "orders"
	op := kmsg.NewOffsetDeleteRequestTopicPartition()
	ot.Partitions = append(ot.Partitions, op)
	od.Topics = append(od.Topics, ot)
	r := h.c.OffsetDelete(context.Background(), h.cl, od)
	if r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != kerr.GroupSubscribedToTopic.Code {
		t.Fatalf("offset delete: %d %+v", r.ErrorCode, r.Topics)
	}
	// DeleteGroups of a consumer group with members.
	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Groups = []string{"cg"}
	if code := h.c.DeleteGroups(context.Background(), h.cl, dg).Groups[0].ErrorCode; code != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete groups: %d", code)
	}
	// ListGroups lists it once, as a consumer group.
	lg := kmsg.NewPtrListGroupsRequest()
	lg.Version = 5
	groups := h.c.ListGroups(context.Background(), h.cl, lg).Groups
	if len(groups) != 1 || groups[0].GroupType != "consumer" {
		t.Fatalf("list: %+v", groups)
	}
}

// TestDeleteEmptyConsumerGroupWithoutOffsets: an empty consumer-protocol
// group with no committed offsets is deleted and answered NONE (it
// existed); an id no side holds is GROUP_ID_NOT_FOUND.
func TestDeleteEmptyConsumerGroupWithoutOffsets(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Consumer = &fakeConsumer{} })
	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Groups = []string{"cg", "none"}
	gs := h.c.DeleteGroups(context.Background(), h.cl, dg).Groups
	if gs[0].ErrorCode != 0 || gs[1].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("delete groups: cg %d, none %d", gs[0].ErrorCode, gs[1].ErrorCode)
	}
}
