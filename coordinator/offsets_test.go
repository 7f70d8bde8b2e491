package coordinator

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen"
)

func TestAssignCommitWritesLayoutAndIndexOnce(t *testing.T) {
	h := newHarness(t, nil)
	req := commitReq("billing", "", -1, "orders", map[int32]int64{3: 43})
	md := "hello"
	req.Topics[0].Partitions[0].Metadata = &md
	if c := h.commit(req); c[0] != 0 {
		t.Fatalf("assign() commit %d", c[0])
	}
	raw, ok := h.kv.get("qk:group:billing:orders:3")
	if !ok {
		t.Fatal("offset row missing")
	}
	var v map[string]any
	_ = json.Unmarshal(raw, &v)
	if v["offset"] != float64(43) || v["metadata"] != "hello" || v["ts"] == nil || len(v) != 3 {
		t.Fatalf("offset value %s", raw)
	}
	idx, ok := h.kv.get("qk:groups:billing")
	if !ok || !strings.Contains(string(idx), `"pt":""`) {
		t.Fatalf("index row %s", idx)
	}
	calls := h.kv.callCount()
	h.commit(commitReq("billing", "", -1, "orders", map[int32]int64{3: 44}))
	if h.kv.callCount() != calls+1 {
		t.Fatalf("the index is written on the first commit only: %d calls", h.kv.callCount()-calls)
	}
	for _, call := range h.kv.callsSince(0) {
		for _, op := range call {
			if op.Op == queen.OpPut && (!op.Forever || op.NS != queen.Namespace) {
				t.Fatalf("put without forever or outside the namespace: %+v", op)
			}
		}
	}
	f := h.fetch("billing", "orders", 3, 4)
	p := f.Topics[0].Partitions
	if p[0].Offset != 44 || p[1].Offset != -1 || p[1].ErrorCode != 0 || f.ErrorCode != 0 {
		t.Fatalf("fetch %+v", p)
	}
}

func TestMemberCommitRules(t *testing.T) {
	h := newHarness(t, nil)
	a, gen := h.stableSolo("g")
	if c := h.commit(commitReq("g", a, gen, "orders", map[int32]int64{0: 7})); c[0] != 0 {
		t.Fatalf("member commit %d", c[0])
	}
	if idx, _ := h.kv.get("qk:groups:g"); !strings.Contains(string(idx), `"pt":"consumer"`) {
		t.Fatalf("consumer group index %s", idx)
	}
	if c := h.commit(commitReq("g", "", -1, "orders", map[int32]int64{0: 1})); c[0] != kerr.UnknownMemberID.Code {
		t.Fatalf("assign() commit into a group with members %d", c[0])
	}
	if c := h.commit(commitReq("g", "ghost", gen, "orders", map[int32]int64{0: 1})); c[0] != kerr.UnknownMemberID.Code {
		t.Fatalf("unknown member %d", c[0])
	}
	if c := h.commit(commitReq("fresh", "m", 3, "orders", map[int32]int64{0: 1})); c[0] != kerr.IllegalGeneration.Code {
		t.Fatalf("generation for a group this process never saw %d", c[0])
	}
	// In the sync phase a commit is REBALANCE_IN_PROGRESS; in the join
	// phase a member of the current generation may still commit.
	bj := h.joinAsync(joinReq(3, "g", ""))
	if c := h.commit(commitReq("g", a, gen, "orders", map[int32]int64{0: 8})); c[0] != 0 {
		t.Fatalf("join-phase commit %d", c[0])
	}
	recv(t, h.joinAsync(joinReq(3, "g", a)))
	recv(t, bj)
	if c := h.commit(commitReq("g", a, gen+1, "orders", map[int32]int64{0: 9})); c[0] != kerr.RebalanceInProgress.Code {
		t.Fatalf("sync-phase commit %d", c[0])
	}
	if f := h.fetch("g", "orders", 0); f.Topics[0].Partitions[0].Offset != 8 {
		t.Fatalf("stored %d", f.Topics[0].Partitions[0].Offset)
	}
}

func TestCommitRefusesBeforeAnyCall(t *testing.T) {
	h := newHarness(t, nil)
	req := commitReq("g", "", -1, "__consumer_offsets", map[int32]int64{0: 1})
	big := strings.Repeat("m", 4097)
	ok := strings.Repeat("m", 4096)
	long := strings.Repeat("t", 500)
	add := func(topic string, p int32, md *string) {
		tp := kmsg.NewOffsetCommitRequestTopic()
		tp.Topic = topic
		cp := kmsg.NewOffsetCommitRequestTopicPartition()
		cp.Partition, cp.Offset, cp.Metadata = p, 5, md
		tp.Partitions = append(tp.Partitions, cp)
		req.Topics = append(req.Topics, tp)
	}
	add("orders", 0, &big)
	add(long, 0, nil)
	add("orders", -1, nil)
	add("orders", 1, &ok)
	codes := h.commit(req)
	want := []int16{kerr.UnknownTopicOrPartition.Code, kerr.OffsetMetadataTooLarge.Code, kerr.InvalidCommitOffsetSize.Code, kerr.UnknownTopicOrPartition.Code, 0}
	for i := range want {
		if codes[i] != want[i] {
			t.Fatalf("codes %v want %v", codes, want)
		}
	}
	for _, call := range h.kv.callsSince(0) {
		for _, op := range call {
			if len(op.Key) > queen.MaxKeyBytes || strings.Contains(op.Key, "__consumer") {
				t.Fatalf("refused key reached the store: %q", op.Key)
			}
		}
	}
	long256 := strings.Repeat("g", 256)
	if c := h.commit(commitReq(long256, "", -1, "orders", map[int32]int64{0: 1})); c[0] != kerr.InvalidGroupID.Code {
		t.Fatalf("group id past 255 %d", c[0])
	}
}

func TestWideCommitIsChunkedWithinCallLimits(t *testing.T) {
	for _, fenced := range []bool{false, true} {
		h := newHarness(t, func(c *Config) { c.Fenced, c.NodeID, c.Incarnation = fenced, 1, "inc" })
		offsets := map[int32]int64{}
		for p := int32(0); p < 600; p++ {
			offsets[p] = int64(p) * 10
		}
		req := commitReq("g", "", -1, "orders", offsets)
		// A partition named twice is one write (never two writes of a key).
		dup := kmsg.NewOffsetCommitRequestTopicPartition()
		dup.Partition, dup.Offset = 5, 555
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, dup)
		for i, c := range h.commit(req) {
			if c != 0 {
				t.Fatalf("fenced=%v partition %d: %d", fenced, i, c)
			}
		}
		calls := h.kv.callsSince(0)
		results := h.kv.resultsSince(0)
		offsetCalls, fenceVer := 0, int64(0)
		for ci, call := range calls {
			if len(call) > 256 {
				t.Fatalf("call of %d ops", len(call))
			}
			seen := map[string]bool{}
			offs := 0
			for i, op := range call {
				if op.Op != queen.OpPut {
					continue
				}
				if seen[op.Key] {
					t.Fatalf("two writes of %s in one call", op.Key)
				}
				seen[op.Key] = true
				if strings.HasPrefix(op.Key, queen.PrefixGroup) {
					offs++
				}
				if strings.HasPrefix(op.Key, queen.PrefixFence) {
					if i != 0 || !op.Required || op.Expect == nil {
						t.Fatalf("fence must be a required put at op 0: %+v", op)
					}
					// Each chunk expects the version the previous chunk's
					// fence became (0 for the first: the fence was absent).
					if *op.Expect != fenceVer {
						t.Fatalf("fence expects %d, the version held is %d", *op.Expect, fenceVer)
					}
					fenceVer = results[ci][0].Version
				}
			}
			if offs > 0 {
				offsetCalls++
				if fenced && offs > 255 || offs > 256 {
					t.Fatalf("fenced=%v: %d offsets in a call", fenced, offs)
				}
				if fenced && !strings.HasPrefix(call[0].Key, queen.PrefixFence) {
					t.Fatalf("fenced offset call without the fence at op 0")
				}
			}
		}
		if want := map[bool]int{false: 3, true: 3}[fenced]; offsetCalls != want {
			t.Fatalf("fenced=%v: %d offset calls, want %d", fenced, offsetCalls, want)
		}
		f := h.fetch("g", "orders", 5, 599)
		if f.Topics[0].Partitions[0].Offset != 555 || f.Topics[0].Partitions[1].Offset != 5990 {
			t.Fatalf("fenced=%v read back %+v", fenced, f.Topics[0].Partitions)
		}
	}
}

func TestFetchTruncatedKeysAreRereadNeverMissing(t *testing.T) {
	h, mem := newMemHarness(t, nil)
	offsets := map[int32]int64{}
	var parts []int32
	for p := int32(0); p < 300; p++ {
		offsets[p] = int64(p) + 1
		parts = append(parts, p)
	}
	h.commit(commitReq("g", "", -1, "orders", offsets))
	mem.SetBudget(400) // a few rows per call: every getMany is cut short
	calls := h.kv.callCount()
	f := h.fetch("g", "orders", parts...)
	for _, p := range f.Topics[0].Partitions {
		if p.Offset != int64(p.Partition)+1 || p.ErrorCode != 0 {
			t.Fatalf("partition %d read as %d (%d)", p.Partition, p.Offset, p.ErrorCode)
		}
	}
	for _, call := range h.kv.callsSince(calls) {
		if len(call) != 1 || len(call[0].Keys) > 128 {
			t.Fatalf("getMany of %d keys", len(call[0].Keys))
		}
	}
	// A budget that never lets a key through is retriable, never "no offset".
	mem.SetBudget(-1)
	f = h.fetch("g", "orders", 0)
	if f.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("unreadable keys answered %d", f.ErrorCode)
	}
}

func TestFetchAllPartitionsPagesByPrefix(t *testing.T) {
	h := newHarness(t, nil)
	offsets := map[int32]int64{}
	for p := int32(0); p < 300; p++ {
		offsets[p] = int64(p) + 100
	}
	h.commit(commitReq("g", "", -1, "orders", offsets))
	h.commit(commitReq("g", "", -1, "audit", map[int32]int64{0: 9}))
	h.commit(commitReq("g2", "", -1, "orders", map[int32]int64{0: 1})) // another group, same prefix start
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = 7
	r.Group = "g"
	r.Topics = nil
	r.RequireStable = true
	calls := h.kv.callCount()
	f := h.c.OffsetFetch(context.Background(), h.cl, r)
	if f.ErrorCode != 0 || len(f.Topics) != 2 || f.Topics[0].Topic != "audit" || len(f.Topics[1].Partitions) != 300 {
		t.Fatalf("all-partitions fetch: %d topics", len(f.Topics))
	}
	for i, p := range f.Topics[1].Partitions {
		if p.Partition != int32(i) || p.Offset != int64(i)+100 {
			t.Fatalf("partition %+v", p)
		}
	}
	for _, call := range h.kv.callsSince(calls) {
		if call[0].Op != queen.OpGetPrefix || call[0].Limit != 128 || call[0].Prefix != "qk:group:g:" {
			t.Fatalf("page %+v", call[0])
		}
	}
	if n := h.kv.callCount() - calls; n != 3 {
		t.Fatalf("%d pages for 301 rows", n)
	}
}

func TestFailureMapping(t *testing.T) {
	cases := []struct {
		kind queen.Kind
		want int16
	}{
		{queen.KindUnauthorized, kerr.GroupAuthorizationFailed.Code},
		{queen.KindForbidden, kerr.GroupAuthorizationFailed.Code},
		{queen.KindThrottled, kerr.CoordinatorNotAvailable.Code},
		{queen.KindTransient, kerr.CoordinatorNotAvailable.Code},
		{queen.KindTimeout, kerr.CoordinatorNotAvailable.Code},
		{queen.KindTransport, kerr.CoordinatorNotAvailable.Code},
		{queen.KindServer, kerr.CoordinatorNotAvailable.Code},
		{queen.KindProtocol, kerr.CoordinatorNotAvailable.Code},
		{queen.KindBadRequest, kerr.UnknownServerError.Code},
	}
	for _, tc := range cases {
		h := newHarness(t, nil)
		h.kv.setFail(func([]queen.KVOp) error { return &queen.Error{Kind: tc.kind, Route: "POST /api/v1/kv", Message: "x"} })
		resp := h.c.OffsetCommit(context.Background(), h.cl, commitReq("g", "", -1, "orders", map[int32]int64{0: 1, 1: 2}))
		if resp.ThrottleMillis != 0 {
			t.Fatalf("%v: a group API is never throttled", tc.kind)
		}
		for _, p := range resp.Topics[0].Partitions {
			if p.ErrorCode != tc.want {
				t.Fatalf("%v commit: %d want %d", tc.kind, p.ErrorCode, tc.want)
			}
		}
		if f := h.fetch("g", "orders", 0); f.ErrorCode != tc.want {
			t.Fatalf("%v fetch: %d", tc.kind, f.ErrorCode)
		}
		r1 := kmsg.NewPtrOffsetFetchRequest()
		r1.Version = 1
		r1.Group = "g"
		t1 := kmsg.NewOffsetFetchRequestTopic()
		t1.Topic, t1.Partitions = "orders", []int32{0}
		r1.Topics = append(r1.Topics, t1)
		if f := h.c.OffsetFetch(context.Background(), h.cl, r1); f.Topics[0].Partitions[0].ErrorCode != tc.want {
			t.Fatalf("%v v1 fetch carries the code per partition: %+v", tc.kind, f.Topics[0].Partitions[0])
		}
	}
}

func TestFailedChunkIsNeverSuccess(t *testing.T) {
	h := newHarness(t, nil)
	offsets := map[int32]int64{}
	for p := int32(0); p < 300; p++ {
		offsets[p] = 1
	}
	calls := 0
	h.kv.setFail(func(ops []queen.KVOp) error {
		if strings.HasPrefix(ops[0].Key, queen.PrefixGroup) {
			calls++
			if calls == 2 {
				return &queen.Error{Kind: queen.KindTransient, Status: 503}
			}
		}
		return nil
	})
	codes := h.commit(commitReq("g", "", -1, "orders", offsets))
	for i, c := range codes {
		written := i < 256
		if written && c != 0 || !written && c != kerr.CoordinatorNotAvailable.Code {
			t.Fatalf("partition %d: %d (first chunk applied, second failed)", i, c)
		}
	}
}

func TestTxnCommitCheck(t *testing.T) {
	h := newHarness(t, nil)
	a, gen := h.stableSolo("g")
	cases := []struct {
		group, member string
		gen           int32
		want          int16
	}{
		{"g", a, gen, 0},
		{"g", "", -1, 0},
		{"g", "ghost", gen, kerr.UnknownMemberID.Code},
		{"g", a, gen + 1, kerr.IllegalGeneration.Code},
		{"fresh", "", -1, 0},
		{"fresh", "m", -1, kerr.UnknownMemberID.Code},
		{"fresh", "", 4, kerr.IllegalGeneration.Code},
		{strings.Repeat("x", 256), "", -1, kerr.InvalidGroupID.Code},
	}
	for _, tc := range cases {
		got, ptype := h.c.TxnCommitCheck(h.cl, tc.group, tc.member, nil, tc.gen, 5)
		if got != tc.want {
			t.Fatalf("%+v: %d", tc, got)
		}
		// The index row a transaction writes names the protocol the group
		// was formed with, as OffsetCommit's does.
		if want := map[bool]string{true: "consumer"}[tc.group == "g" && got == 0]; ptype != want {
			t.Fatalf("%+v: protocol type %q, want %q", tc, ptype, want)
		}
	}
}

// OffsetFetch v8 asks for several groups at once, each answered on its own
// (its offsets, or its own code); v9's member id and epoch are not checked
// for a classic group, as Kafka does not check them.
func TestOffsetFetchSeveralGroups(t *testing.T) {
	h := newHarness(t, nil)
	require.Equal(t, []int16{0, 0}, h.commit(commitReq("g1", "", -1, "orders", map[int32]int64{0: 10, 1: 11})))
	require.Equal(t, []int16{0}, h.commit(commitReq("g2", "", -1, "orders", map[int32]int64{2: 22})))
	for _, v := range []int16{8, 9} {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = v
		add := func(group string, topics map[string][]int32) {
			rg := kmsg.NewOffsetFetchRequestGroup()
			rg.Group = group
			if v == 9 {
				rg.MemberID, rg.MemberEpoch = kmsg.StringPtr("not-a-member"), 42
			}
			if topics != nil {
				rg.Topics = []kmsg.OffsetFetchRequestGroupTopic{}
			}
			for topic, ps := range topics {
				rt := kmsg.NewOffsetFetchRequestGroupTopic()
				rt.Topic, rt.Partitions = topic, ps
				rg.Topics = append(rg.Topics, rt)
			}
			req.Groups = append(req.Groups, rg)
		}
		add("g1", map[string][]int32{"orders": {0, 1, 7}})
		add("g2", nil) // every committed partition
		add(strings.Repeat("x", 256), map[string][]int32{"orders": {0}})
		add("never", map[string][]int32{"orders": {0}})
		resp := h.c.OffsetFetch(context.Background(), h.cl, req)
		require.Len(t, resp.Groups, 4, "v%d", v)
		offsets := func(g kmsg.OffsetFetchResponseGroup) map[int32]int64 {
			out := map[int32]int64{}
			for _, tp := range g.Topics {
				require.Equal(t, "orders", tp.Topic)
				for _, p := range tp.Partitions {
					require.Zero(t, p.ErrorCode)
					out[p.Partition] = p.Offset
				}
			}
			return out
		}
		require.Equal(t, "g1", resp.Groups[0].Group)
		require.Zero(t, resp.Groups[0].ErrorCode)
		require.Equal(t, map[int32]int64{0: 10, 1: 11, 7: -1}, offsets(resp.Groups[0]))
		require.Equal(t, map[int32]int64{2: 22}, offsets(resp.Groups[1]))
		require.Equal(t, kerr.InvalidGroupID.Code, resp.Groups[2].ErrorCode)
		require.Empty(t, resp.Groups[2].Topics)
		require.Equal(t, map[int32]int64{0: -1}, offsets(resp.Groups[3]))
	}
}
