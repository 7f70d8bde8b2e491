package shareadmin

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/internal/testsupport/memkv"
	"github.com/queen-mq/queen-kafka/ownership"
	"github.com/queen-mq/queen-kafka/sharepartition"
)

type fakeGroups map[string][2]bool // group: exists, empty

func (f fakeGroups) State(_ context.Context, _ KV, group string) (bool, bool, error) {
	s := f[group]
	return s[0], s[1], nil
}

type fakeTopics map[string]int32 // name: width

func (f fakeTopics) Served(_ context.Context, topic string) ([16]byte, int32, bool, error) {
	w, ok := f[topic]
	return [16]byte{byte(len(topic))}, w, ok, nil
}

type fakeLog map[int32]int64

func (f fakeLog) EndOffsets(_ context.Context, _ string, ps []int32) (map[int32]int64, error) {
	out := map[int32]int64{}
	for _, p := range ps {
		out[p] = f[p]
	}
	return out, nil
}

type otherOwner struct{}

func (otherOwner) Owner(string) (ownership.Broker, error)   { return ownership.Broker{NodeID: 2}, nil }
func (otherOwner) Redirect(string) (ownership.Broker, bool) { return ownership.Broker{}, false }
func (otherOwner) Self() ownership.Broker                   { return ownership.Broker{NodeID: 1} }

func alterReq(group, topic string, offsets map[int32]int64) *kmsg.AlterShareGroupOffsetsRequest {
	req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	req.GroupID = group
	t := kmsg.NewAlterShareGroupOffsetsRequestTopic()
	t.Topic = topic
	for p, o := range offsets {
		rp := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
		rp.Partition, rp.StartOffset = p, o
		t.Partitions = append(t.Partitions, rp)
	}
	req.Topics = append(req.Topics, t)
	return req
}

func describe(a *Admin, cl Caller, version int16, group string, topic string, parts ...int32) kmsg.DescribeShareGroupOffsetsResponseGroup {
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	req.Version = version
	g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	g.GroupID = group
	if topic != "" {
		t := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
		t.Topic, t.Partitions = topic, parts
		g.Topics = append(g.Topics, t)
	}
	req.Groups = append(req.Groups, g)
	return a.Describe(context.Background(), cl, req).Groups[0]
}

func deleteReq(group string, topics ...string) *kmsg.DeleteShareGroupOffsetsRequest {
	req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	req.GroupID = group
	for _, t := range topics {
		rt := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
		rt.Topic = t
		req.Topics = append(req.Topics, rt)
	}
	return req
}

func TestAlterDescribeDelete(t *testing.T) {
	ctx := context.Background()
	kv := memkv.New()
	groups := fakeGroups{"busy": {true, false}}
	a := New(groups, ownership.Single{})
	cl := Caller{KV: kv, Topics: fakeTopics{"orders": 2}, Log: fakeLog{0: 20, 1: 5}}

	// A fresh group's offsets are set (Kafka creates the group); an unknown
	// partition and a negative offset are refused on their own.
	resp := a.Alter(ctx, cl, alterReq("g", "orders", map[int32]int64{0: 8}))
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 || resp.Topics[0].TopicID == ([16]byte{}) {
		t.Fatalf("alter: %+v", resp)
	}
	resp = a.Alter(ctx, cl, alterReq("g", "orders", map[int32]int64{7: 1}))
	if resp.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown partition: %+v", resp)
	}
	resp = a.Alter(ctx, cl, alterReq("g", "nope", map[int32]int64{0: 1}))
	if resp.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic: %+v", resp)
	}
	resp = a.Alter(ctx, cl, alterReq("g", "orders", map[int32]int64{1: -1}))
	if resp.Topics[0].Partitions[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("negative offset: %+v", resp)
	}

	// Described explicitly and as every partition with state; lag from v1.
	g := describe(a, cl, 1, "g", "orders", 0, 1)
	if g.ErrorCode != 0 || len(g.Topics) != 1 || len(g.Topics[0].Partitions) != 2 {
		t.Fatalf("describe: %+v", g)
	}
	p0, p1 := g.Topics[0].Partitions[0], g.Topics[0].Partitions[1]
	if p0.StartOffset != 8 || p0.Lag != 12 || p1.StartOffset != -1 || p1.Lag != -1 {
		t.Fatalf("describe partitions: %+v %+v", p0, p1)
	}
	all := describe(a, cl, 0, "g", "")
	if len(all.Topics) != 1 || len(all.Topics[0].Partitions) != 1 || all.Topics[0].Partitions[0].StartOffset != 8 || all.Topics[0].Partitions[0].Lag != -1 {
		t.Fatalf("describe all (v0): %+v", all)
	}
	if g := describe(a, cl, 1, "g", "nope", 0); g.Topics[0].Partitions[0].StartOffset != -1 || g.Topics[0].TopicID != ([16]byte{}) {
		t.Fatalf("describe of an unknown topic: %+v", g)
	}

	// A group with members is refused both writes.
	if r := a.Alter(ctx, cl, alterReq("busy", "orders", map[int32]int64{0: 1})); r.ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("alter busy: %+v", r)
	}
	if r := a.Delete(ctx, cl, deleteReq("busy", "orders")); r.ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete busy: %+v", r)
	}
	// A group with neither members nor state does not exist.
	if r := a.Delete(ctx, cl, deleteReq("ghost", "orders")); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("delete ghost: %+v", r)
	}
	// Delete forgets the topic's state.
	d := a.Delete(ctx, cl, deleteReq("g", "orders", "nope"))
	if d.ErrorCode != 0 || len(d.Topics) != 2 || d.Topics[0].ErrorCode != 0 || d.Topics[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("delete: %+v", d)
	}
	if sums, _ := sharepartition.Describe(ctx, kv, "g"); len(sums) != 0 {
		t.Fatalf("state left: %+v", sums)
	}
	if g := describe(a, cl, 1, "g", "orders", 0); g.Topics[0].Partitions[0].StartOffset != -1 {
		t.Fatalf("after delete: %+v", g)
	}
}

func TestRefusals(t *testing.T) {
	ctx := context.Background()
	cl := Caller{KV: memkv.New(), Topics: fakeTopics{"orders": 1}}
	a := New(fakeGroups{}, otherOwner{})
	if r := a.Alter(ctx, cl, alterReq("g", "orders", map[int32]int64{0: 1})); r.ErrorCode != kerr.NotCoordinator.Code || r.Topics != nil {
		t.Fatalf("alter elsewhere: %+v", r)
	}
	if r := a.Delete(ctx, cl, deleteReq("g", "orders")); r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("delete elsewhere: %+v", r)
	}
	if g := describe(a, cl, 1, "g", "orders", 0); g.ErrorCode != kerr.NotCoordinator.Code || g.Topics != nil {
		t.Fatalf("describe elsewhere: %+v", g)
	}
	a = New(fakeGroups{}, ownership.Single{})
	if r := a.Alter(ctx, cl, alterReq("", "orders", map[int32]int64{0: 1})); r.ErrorCode != kerr.InvalidGroupID.Code {
		t.Fatalf("alter of no group: %+v", r)
	}
	if r := a.Delete(ctx, cl, deleteReq("")); r.ErrorCode != kerr.InvalidGroupID.Code {
		t.Fatalf("delete of no group: %+v", r)
	}
}
