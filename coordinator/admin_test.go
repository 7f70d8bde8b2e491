package coordinator

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen"
)

func (h *harness) deleteGroups(ids ...string) []int16 {
	r := kmsg.NewPtrDeleteGroupsRequest()
	r.Version = 2
	r.Groups = ids
	var codes []int16
	for _, g := range h.c.DeleteGroups(context.Background(), h.cl, r).Groups {
		codes = append(codes, g.ErrorCode)
	}
	return codes
}

func (h *harness) offsetDelete(group string, topics map[string][]int32) *kmsg.OffsetDeleteResponse {
	r := kmsg.NewPtrOffsetDeleteRequest()
	r.Group = group
	for topic, parts := range topics {
		t := kmsg.NewOffsetDeleteRequestTopic()
		t.Topic = topic
		for _, p := range parts {
			tp := kmsg.NewOffsetDeleteRequestTopicPartition()
			tp.Partition = p
			t.Partitions = append(t.Partitions, tp)
		}
		r.Topics = append(r.Topics, t)
	}
	return h.c.OffsetDelete(context.Background(), h.cl, r)
}

func TestDeleteGroupsRules(t *testing.T) {
	h := newHarness(t, nil)
	a, gen := h.stableSolo("g")
	offsets := map[int32]int64{}
	for p := int32(0); p < 300; p++ {
		offsets[p] = 1
	}
	h.commit(commitReq("g", a, gen, "orders", offsets))
	if c := h.deleteGroups("g"); c[0] != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete with live members %d", c[0])
	}
	h.leave("g", a)
	calls := h.kv.callCount()
	if c := h.deleteGroups("g", "never", strings.Repeat("x", 256)); c[0] != 0 || c[1] != kerr.GroupIDNotFound.Code || c[2] != kerr.InvalidGroupID.Code {
		t.Fatalf("delete codes %v", c)
	}
	left := h.kv.count("qk:")
	if left != 0 {
		t.Fatalf("%d rows left after DeleteGroups", left)
	}
	// The index goes last: it is the final write of the final call.
	var last queen.KVOp
	for _, call := range h.kv.callsSince(calls) {
		for _, op := range call {
			if op.Op == queen.OpDelete {
				if strings.HasPrefix(last.Key, queen.PrefixGroups) {
					t.Fatalf("a delete after the index")
				}
				last = op
			}
		}
	}
	if last.Key != "qk:groups:g" {
		t.Fatalf("last delete %q", last.Key)
	}
	if h.state("g") != "absent" {
		t.Fatalf("deleted group still held: %s", h.state("g"))
	}
	// An index-only group (a previous process's) is deletable too.
	h.commit(commitReq("old", "", -1, "orders", map[int32]int64{0: 1}))
	h.c = New(h.c.cfg)
	if c := h.deleteGroups("old"); c[0] != 0 {
		t.Fatalf("delete of a store-only group %d", c[0])
	}
	// A failed delete is never success, and the group survives it.
	h.commit(commitReq("keep", "", -1, "orders", map[int32]int64{0: 1}))
	h.kv.setFail(func(ops []queen.KVOp) error {
		if ops[0].Op == queen.OpDelete {
			return &queen.Error{Kind: queen.KindForbidden, Status: 403}
		}
		return nil
	})
	if c := h.deleteGroups("keep"); c[0] != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("refused delete %d", c[0])
	}
	if _, ok := h.kv.get("qk:groups:keep"); !ok {
		t.Fatal("index gone after a failed delete")
	}
	if h.state("keep") != "Empty" {
		t.Fatalf("group after failed delete: %s", h.state("keep"))
	}
}

func TestOffsetDeleteHonoursSubscriptions(t *testing.T) {
	h := newHarness(t, nil)
	a, gen := h.stableSolo("g") // joinReq subscribes to "orders"
	h.commit(commitReq("g", a, gen, "orders", map[int32]int64{0: 5}))
	h.commit(commitReq("g", a, gen, "audit", map[int32]int64{0: 6, 1: 7}))
	r := h.offsetDelete("g", map[string][]int32{"orders": {0}, "audit": {0}})
	if r.ErrorCode != 0 {
		t.Fatalf("group code %d", r.ErrorCode)
	}
	for _, tp := range r.Topics {
		want := int16(0)
		if tp.Topic == "orders" {
			want = kerr.GroupSubscribedToTopic.Code
		}
		if tp.Partitions[0].ErrorCode != want {
			t.Fatalf("%s: %d want %d", tp.Topic, tp.Partitions[0].ErrorCode, want)
		}
	}
	if _, ok := h.kv.get("qk:group:g:orders:0"); !ok {
		t.Fatal("subscribed topic's offset deleted")
	}
	if _, ok := h.kv.get("qk:group:g:audit:0"); ok {
		t.Fatal("unsubscribed topic's offset kept")
	}
	if _, ok := h.kv.get("qk:group:g:audit:1"); !ok {
		t.Fatal("a partition not asked for was deleted")
	}
	// Once the group is empty everything is deletable.
	h.leave("g", a)
	if r := h.offsetDelete("g", map[string][]int32{"orders": {0}}); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("empty group %+v", r)
	}
	if _, ok := h.kv.get("qk:group:g:orders:0"); ok {
		t.Fatal("offset kept")
	}
	if r := h.offsetDelete("nobody", map[string][]int32{"orders": {0}}); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("unknown group %d", r.ErrorCode)
	}
	// Unparsable subscription bytes are treated as subscribed to everything.
	req := joinReq(3, "raw", "")
	req.Protocols[0].Metadata = []byte{0xff}
	j := recv(t, h.joinAsync(req))
	h.c.SyncGroup(context.Background(), h.cl, syncReq("raw", j.MemberID, j.Generation, nil))
	if r := h.offsetDelete("raw", map[string][]int32{"anything": {0}}); r.Topics[0].Partitions[0].ErrorCode != kerr.GroupSubscribedToTopic.Code {
		t.Fatalf("unknown subscription %+v", r.Topics)
	}
	// A live group of another protocol type is NON_EMPTY_GROUP.
	conn := joinReq(3, "connect", "")
	conn.ProtocolType = "connect"
	recv(t, h.joinAsync(conn))
	if r := h.offsetDelete("connect", map[string][]int32{"x": {0}}); r.ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("connect group %d", r.ErrorCode)
	}
}

func TestListGroupsMemoryAndIndex(t *testing.T) {
	h := newHarness(t, nil)
	h.commit(commitReq("old", "", -1, "orders", map[int32]int64{0: 1}))
	h.c = New(h.c.cfg) // "old" is now known only to the index
	h.stableSolo("live")
	recv(t, h.joinAsync(joinReq(3, "joining", ""))) // CompletingRebalance
	list := func(v int16, states ...string) map[string]kmsg.ListGroupsResponseGroup {
		r := kmsg.NewPtrListGroupsRequest()
		r.Version = v
		r.StatesFilter = states
		resp := h.c.ListGroups(context.Background(), h.cl, r)
		if resp.ErrorCode != 0 {
			t.Fatalf("list %d", resp.ErrorCode)
		}
		out := map[string]kmsg.ListGroupsResponseGroup{}
		for _, g := range resp.Groups {
			out[g.Group] = g
		}
		return out
	}
	all := list(4)
	if len(all) != 3 || all["old"].GroupState != "Empty" || all["old"].ProtocolType != "" || all["live"].GroupState != "Stable" || all["live"].ProtocolType != "consumer" || all["joining"].GroupState != "CompletingRebalance" {
		t.Fatalf("list %+v", all)
	}
	if s := list(4, "stable"); len(s) != 1 || s["live"].Group != "live" {
		t.Fatalf("states filter %+v", s)
	}
	if s := list(4, "Empty", "CompletingRebalance"); len(s) != 2 {
		t.Fatalf("two states %+v", s)
	}
	h.kv.setFail(func([]queen.KVOp) error { return &queen.Error{Kind: queen.KindThrottled, Status: 429} })
	r := kmsg.NewPtrListGroupsRequest()
	r.Version = 4
	if resp := h.c.ListGroups(context.Background(), h.cl, r); resp.ErrorCode != kerr.CoordinatorNotAvailable.Code || resp.ThrottleMillis != 0 {
		t.Fatalf("list with the store throttling: %d", resp.ErrorCode)
	}
	dr := kmsg.NewPtrDescribeGroupsRequest()
	dr.Groups = []string{"old"}
	h.kv.setFail(nil)
	if d := h.c.DescribeGroups(context.Background(), h.cl, dr); d.Groups[0].State != "Empty" {
		t.Fatalf("index-only group described %+v", d.Groups[0])
	}
}

// TestDescribeUnknownGroupAtV6: from DescribeGroups v6 (KIP-1043) a group
// that does not exist is GROUP_ID_NOT_FOUND with a message; below v6 it is
// described Dead with no error, as Kafka does; a group that exists is
// described alike at every version.
func TestDescribeUnknownGroupAtV6(t *testing.T) {
	h := newHarness(t, nil)
	if c := h.commit(commitReq("known", "", -1, "orders", map[int32]int64{0: 1})); c[0] != 0 {
		t.Fatalf("commit %d", c[0])
	}
	for _, v := range []int16{0, 5, 6} {
		dr := kmsg.NewPtrDescribeGroupsRequest()
		dr.Version, dr.Groups = v, []string{"nobody", "known"}
		d := h.c.DescribeGroups(context.Background(), h.cl, dr)
		unknown, known := d.Groups[0], d.Groups[1]
		if known.ErrorCode != 0 || known.State != "Empty" || known.ErrorMessage != nil {
			t.Fatalf("v%d known group %+v", v, known)
		}
		if unknown.State != "Dead" {
			t.Fatalf("v%d unknown group state %q", v, unknown.State)
		}
		switch {
		case v < 6 && (unknown.ErrorCode != 0 || unknown.ErrorMessage != nil):
			t.Fatalf("v%d unknown group %+v: Dead without an error below v6", v, unknown)
		case v >= 6 && (unknown.ErrorCode != kerr.GroupIDNotFound.Code || unknown.ErrorMessage == nil || *unknown.ErrorMessage != "Group nobody not found."):
			t.Fatalf("v%d unknown group %+v: GROUP_ID_NOT_FOUND with a message", v, unknown)
		}
	}
}

func TestOverlongEscapedGroupNeverReachesTheStore(t *testing.T) {
	h := newHarness(t, nil)
	id := strings.Repeat("ü", 200) // 200 characters, 1200 escaped bytes
	calls := h.kv.callCount()
	if c := h.commit(commitReq(id, "", -1, "orders", map[int32]int64{0: 1})); c[0] != kerr.InvalidCommitOffsetSize.Code {
		t.Fatalf("commit %d", c[0])
	}
	h.c = New(h.c.cfg) // the commit created the group in memory, as Kafka does; look at the store
	dr := kmsg.NewPtrDescribeGroupsRequest()
	dr.Groups = []string{id}
	if d := h.c.DescribeGroups(context.Background(), h.cl, dr); d.Groups[0].ErrorCode != 0 || d.Groups[0].State != "Dead" {
		t.Fatalf("describe %+v", d.Groups[0])
	}
	if r := h.offsetDelete(id, map[string][]int32{"orders": {0}}); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("offset delete %d", r.ErrorCode)
	}
	if c := h.deleteGroups(id); c[0] != kerr.GroupIDNotFound.Code {
		t.Fatalf("delete %d", c[0])
	}
	if f := h.fetch(id, "orders", 0); f.ErrorCode != 0 || f.Topics[0].Partitions[0].Offset != -1 {
		t.Fatalf("fetch %+v", f)
	}
	if n := h.kv.callCount() - calls; n != 0 {
		t.Fatalf("%d calls carried keys the store refuses", n)
	}
}

// A group held Dead in memory (DeleteGroups is removing its rows) is
// described from the store; its lock is not held across that Queen call,
// which would stall every request and timer of the group behind it.
func TestDescribeReadsTheStoreWithoutTheGroupLock(t *testing.T) {
	h := newHarness(t, nil)
	g, err := h.c.getOrCreate(h.cl, "g")
	if err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	g.state = stateDead
	g.mu.Unlock()
	reading, release := make(chan struct{}), make(chan struct{})
	h.kv.setFail(func(ops []queen.KVOp) error {
		if ops[0].Op == queen.OpGetMany {
			close(reading)
			<-release
		}
		return nil
	})
	dr := kmsg.NewPtrDescribeGroupsRequest()
	dr.Groups = []string{"g"}
	out := make(chan *kmsg.DescribeGroupsResponse, 1)
	go func() { out <- h.c.DescribeGroups(context.Background(), h.cl, dr) }()
	select {
	case <-reading:
	case <-time.After(5 * time.Second):
		t.Fatal("describe never read the store")
	}
	free := g.mu.TryLock()
	if free {
		g.mu.Unlock()
	}
	close(release)
	if d := recv(t, out); d.Groups[0].ErrorCode != 0 || d.Groups[0].State != "Dead" {
		t.Fatalf("describe %+v", d.Groups[0])
	}
	if !free {
		t.Fatal("the group's lock was held across the store read")
	}
}
