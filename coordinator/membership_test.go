package coordinator

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestJoinSyncHeartbeatSoloMember(t *testing.T) {
	h := newHarness(t, nil)
	j := recv(t, h.joinAsync(joinReq(3, "g", "")))
	if j.ErrorCode != 0 || j.Generation != 1 || j.LeaderID != j.MemberID || len(j.Members) != 1 || *j.Protocol != "range" {
		t.Fatalf("join answer %+v", j)
	}
	if !strings.HasPrefix(j.MemberID, "cli-") {
		t.Fatalf("member id %q is not client id + uuid", j.MemberID)
	}
	if got := h.state("g"); got != "CompletingRebalance" {
		t.Fatalf("state %s", got)
	}
	s := h.c.SyncGroup(context.Background(), h.cl, syncReq("g", j.MemberID, 1, map[string]string{j.MemberID: "assign"}))
	if s.ErrorCode != 0 || string(s.MemberAssignment) != "assign" {
		t.Fatalf("sync %+v", s)
	}
	if h.state("g") != "Stable" {
		t.Fatal("not stable")
	}
	if code := h.heartbeat("g", j.MemberID, 1); code != 0 {
		t.Fatalf("heartbeat %d", code)
	}
}

func TestJoinMemberIDRequiredAtV4(t *testing.T) {
	h := newHarness(t, nil)
	j := recv(t, h.joinAsync(joinReq(4, "g", "")))
	if j.ErrorCode != kerr.MemberIDRequired.Code || j.MemberID == "" {
		t.Fatalf("v4 first join: %+v", j)
	}
	j2 := recv(t, h.joinAsync(joinReq(4, "g", j.MemberID)))
	if j2.ErrorCode != 0 || j2.MemberID != j.MemberID || j2.Generation != 1 {
		t.Fatalf("rejoin with the handed-out id: %+v", j2)
	}
	// A handed-out id that is never used expires with the session timeout.
	j3 := recv(t, h.joinAsync(joinReq(4, "g2", "")))
	h.clock.Advance(testSession)
	if j4 := recv(t, h.joinAsync(joinReq(4, "g2", j3.MemberID))); j4.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("expired pending id: %d", j4.ErrorCode)
	}
	// Below v4 the first join is admitted at once.
	if j5 := recv(t, h.joinAsync(joinReq(3, "g3", ""))); j5.ErrorCode != 0 {
		t.Fatalf("v3: %d", j5.ErrorCode)
	}
}

func TestInitialJoinDelayWaitsForCompany(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.JoinDelay = 3 * time.Second })
	a := h.joinAsync(joinReq(3, "g", ""))
	h.clock.Advance(2 * time.Second)
	b := h.joinAsync(joinReq(3, "g", ""))
	h.clock.Advance(999 * time.Millisecond) // the first delay ends at 3 s, extended by b
	pending(t, a)
	pending(t, b)
	h.clock.Advance(2 * time.Second) // 5 s: still inside the extension
	pending(t, a)
	h.clock.Advance(1001 * time.Millisecond) // 6 s: the extension is over
	ja, jb := recv(t, a), recv(t, b)
	if ja.ErrorCode != 0 || jb.ErrorCode != 0 || ja.Generation != 1 || jb.Generation != 1 {
		t.Fatalf("answers %+v %+v", ja, jb)
	}
	if ja.LeaderID != ja.MemberID || len(ja.Members) != 2 || len(jb.Members) != 0 || jb.LeaderID != ja.MemberID {
		t.Fatalf("first joiner must lead with both members listed: %+v / %+v", ja, jb)
	}
}

func TestInitialJoinDelayNeverPassesRebalanceTimeout(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.JoinDelay = 3 * time.Second })
	req := joinReq(3, "g", "")
	req.RebalanceTimeoutMillis = 4000
	a := h.joinAsync(req)
	// b arrives inside the delay, which would extend it by another 3 s;
	// the 4 s rebalance timeout caps the whole initial phase at 4 s.
	h.clock.Advance(2500 * time.Millisecond)
	r := joinReq(3, "g", "")
	r.RebalanceTimeoutMillis = 4000
	b := h.joinAsync(r)
	h.clock.Advance(1499 * time.Millisecond)
	pending(t, a)
	h.clock.Advance(time.Millisecond)
	if ja, jb := recv(t, a), recv(t, b); ja.ErrorCode != 0 || jb.ErrorCode != 0 || len(ja.Members) != 2 {
		t.Fatalf("joins %+v %+v", ja, jb)
	}
}

func twoMemberStable(t *testing.T, h *harness, group string) (a, b string, gen int32) {
	t.Helper()
	a, gen = h.stableSolo(group)
	bj := h.joinAsync(joinReq(3, group, ""))
	if h.state(group) != "PreparingRebalance" {
		t.Fatalf("a new member must open a rebalance, state %s", h.state(group))
	}
	if code := h.heartbeat(group, a, gen); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("join-phase heartbeat: %d", code)
	}
	aj := recv(t, h.joinAsync(joinReq(3, group, a)))
	bjr := recv(t, bj)
	if aj.ErrorCode != 0 || bjr.ErrorCode != 0 || aj.Generation != gen+1 || aj.LeaderID != a {
		t.Fatalf("rebalance answers %+v %+v", aj, bjr)
	}
	b, gen = bjr.MemberID, aj.Generation
	bs := h.syncAsync(syncReq(group, b, gen, nil))
	pending(t, bs)
	// Sync phase: the member already had its JoinGroup answer, so its
	// heartbeat is no error (seed 001's deviation).
	if code := h.heartbeat(group, b, gen); code != 0 {
		t.Fatalf("sync-phase heartbeat: %d", code)
	}
	as := h.c.SyncGroup(context.Background(), h.cl, syncReq(group, a, gen, map[string]string{a: "pa", b: "pb"}))
	if as.ErrorCode != 0 || string(as.MemberAssignment) != "pa" {
		t.Fatalf("leader sync %+v", as)
	}
	if r := recv(t, bs); r.ErrorCode != 0 || string(r.MemberAssignment) != "pb" {
		t.Fatalf("follower sync %+v", r)
	}
	return a, b, gen
}

func TestRebalanceOnJoinAndHeartbeatPhases(t *testing.T) {
	h := newHarness(t, nil)
	a, b, gen := twoMemberStable(t, h, "g")
	if h.heartbeat("g", a, gen) != 0 || h.heartbeat("g", b, gen) != 0 {
		t.Fatal("stable heartbeats")
	}
	// A follower rejoining with unchanged metadata in Stable gets the
	// current generation back without a rebalance.
	if r := recv(t, h.joinAsync(joinReq(3, "g", b))); r.ErrorCode != 0 || r.Generation != gen || h.state("g") != "Stable" {
		t.Fatalf("idempotent follower rejoin: %+v state %s", r, h.state("g"))
	}
}

func TestLeaveGroupRebalancesTheRest(t *testing.T) {
	h := newHarness(t, nil)
	a, b, gen := twoMemberStable(t, h, "g")
	if code := h.leave("g", a); code != 0 {
		t.Fatalf("leave %d", code)
	}
	if code := h.heartbeat("g", b, gen); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("survivor heartbeat %d", code)
	}
	r := recv(t, h.joinAsync(joinReq(3, "g", b)))
	if r.ErrorCode != 0 || r.Generation != gen+1 || r.LeaderID != b {
		t.Fatalf("survivor rejoin %+v", r)
	}
	if code := h.leave("g", a); code != kerr.UnknownMemberID.Code {
		t.Fatalf("second leave %d", code)
	}
	if code := h.leave("nope", "x"); code != kerr.UnknownMemberID.Code {
		t.Fatalf("leave of unknown group %d", code)
	}
}

func TestSessionExpiryEvictsSilentMember(t *testing.T) {
	h := newHarness(t, nil)
	a, b, gen := twoMemberStable(t, h, "g")
	for i := 0; i < 3; i++ {
		h.clock.Advance(3 * time.Second)
		if code := h.heartbeat("g", a, gen); code != 0 {
			t.Fatalf("a's heartbeat at %d: %d", i, code)
		}
	}
	// b has been silent for 12 s > its 10 s session.
	h.clock.Advance(3 * time.Second)
	if code := h.heartbeat("g", a, gen); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("after b's eviction a must rebalance: %d", code)
	}
	if code := h.heartbeat("g", b, gen); code != kerr.UnknownMemberID.Code {
		t.Fatalf("evicted b: %d", code)
	}
	r := recv(t, h.joinAsync(joinReq(3, "g", a)))
	if r.ErrorCode != 0 || r.Generation != gen+1 || len(r.Members) != 1 {
		t.Fatalf("rejoin %+v", r)
	}
}

func TestRebalanceTimeoutRemovesMembersThatDoNotRejoin(t *testing.T) {
	h := newHarness(t, nil)
	a, b, gen := twoMemberStable(t, h, "g")
	// a rejoins (leader: always a rebalance); b keeps heartbeating but never
	// rejoins, so only the rebalance timeout can end the phase.
	ar := h.joinAsync(joinReq(3, "g", a))
	for i := 0; i < 6; i++ {
		h.clock.Advance(3 * time.Second)
		pending(t, ar)
		if len(ar) == 0 {
			if code := h.heartbeat("g", b, gen); code != kerr.RebalanceInProgress.Code {
				t.Fatalf("b heartbeat %d", code)
			}
		}
	}
	h.clock.Advance(2 * time.Second) // 20 s: the rebalance timeout
	r := recv(t, ar)
	if r.ErrorCode != 0 || r.Generation != gen+1 || len(r.Members) != 1 {
		t.Fatalf("after rebalance timeout: %+v", r)
	}
	if code := h.heartbeat("g", b, gen); code != kerr.UnknownMemberID.Code {
		t.Fatalf("b not removed: %d", code)
	}
}

func TestGenerationFencing(t *testing.T) {
	h := newHarness(t, nil)
	a, b, gen := twoMemberStable(t, h, "g")
	if code := h.heartbeat("g", a, gen-1); code != kerr.IllegalGeneration.Code {
		t.Fatalf("old generation heartbeat %d", code)
	}
	if code := h.heartbeat("g", "ghost", gen); code != kerr.UnknownMemberID.Code {
		t.Fatalf("unknown member heartbeat %d", code)
	}
	if code := h.heartbeat("nope", a, gen); code != kerr.UnknownMemberID.Code {
		t.Fatalf("unknown group heartbeat %d", code)
	}
	if s := h.c.SyncGroup(context.Background(), h.cl, syncReq("g", b, gen-1, nil)); s.ErrorCode != kerr.IllegalGeneration.Code {
		t.Fatalf("old generation sync %d", s.ErrorCode)
	}
	if s := h.c.SyncGroup(context.Background(), h.cl, syncReq("g", "ghost", gen, nil)); s.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("unknown member sync %d", s.ErrorCode)
	}
	// During a join phase SyncGroup is REBALANCE_IN_PROGRESS.
	h.joinAsync(joinReq(3, "g", ""))
	if s := h.c.SyncGroup(context.Background(), h.cl, syncReq("g", b, gen, nil)); s.ErrorCode != kerr.RebalanceInProgress.Code {
		t.Fatalf("join-phase sync %d", s.ErrorCode)
	}
	if code := h.commit(commitReq("g", b, gen-1, "orders", map[int32]int64{0: 5})); code[0] != kerr.IllegalGeneration.Code {
		t.Fatalf("old generation commit %d", code[0])
	}
}

func TestSyncPhaseAbandonedByRebalanceAnswersWaiters(t *testing.T) {
	h := newHarness(t, nil)
	a, gen := h.stableSolo("g")
	bj := h.joinAsync(joinReq(3, "g", ""))
	recv(t, h.joinAsync(joinReq(3, "g", a)))
	b := recv(t, bj).MemberID
	bs := h.syncAsync(syncReq("g", b, gen+1, nil))
	// The leader leaves before syncing: b's parked SyncGroup must rejoin.
	h.leave("g", a)
	if r := recv(t, bs); r.ErrorCode != kerr.RebalanceInProgress.Code {
		t.Fatalf("parked follower sync: %d", r.ErrorCode)
	}
}

func TestProtocolSelection(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.JoinDelay = time.Second })
	a := h.joinAsync(joinReq(3, "g", "", "range", "roundrobin", "sticky"))
	b := h.joinAsync(joinReq(3, "g", "", "roundrobin", "range"))
	c := h.joinAsync(joinReq(3, "g", "", "roundrobin", "range"))
	h.clock.Advance(10 * time.Second)
	for _, ch := range []<-chan *kmsg.JoinGroupResponse{a, b, c} {
		if r := recv(t, ch); r.ErrorCode != 0 || *r.Protocol != "roundrobin" {
			t.Fatalf("majority preference must win among common protocols: %+v", r)
		}
	}
	// A member supporting none of the group's protocols is refused.
	if r := recv(t, h.joinAsync(joinReq(3, "g", "", "cooperative-sticky"))); r.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("incompatible protocol %d", r.ErrorCode)
	}
	other := joinReq(3, "g", "", "range")
	other.ProtocolType = "connect"
	if r := recv(t, h.joinAsync(other)); r.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("other protocol type %d", r.ErrorCode)
	}
	empty := joinReq(3, "g2", "")
	empty.Protocols = nil
	if r := recv(t, h.joinAsync(empty)); r.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("no protocols %d", r.ErrorCode)
	}
}

func TestJoinValidation(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxGroups, c.MaxGroupsPerIdentity = 2, 2 })
	short := joinReq(3, "g", "")
	short.SessionTimeoutMillis = 5999
	long := joinReq(3, "g", "")
	long.SessionTimeoutMillis = 300001
	for _, r := range []*kmsg.JoinGroupRequest{short, long} {
		if got := recv(t, h.joinAsync(r)); got.ErrorCode != kerr.InvalidSessionTimeout.Code {
			t.Fatalf("session %d: %d", r.SessionTimeoutMillis, got.ErrorCode)
		}
	}
	if got := recv(t, h.joinAsync(joinReq(3, "", ""))); got.ErrorCode != kerr.InvalidGroupID.Code {
		t.Fatalf("empty group id %d", got.ErrorCode)
	}
	if got := recv(t, h.joinAsync(joinReq(3, strings.Repeat("é", 256), ""))); got.ErrorCode != kerr.InvalidGroupID.Code {
		t.Fatalf("256-character group id %d", got.ErrorCode)
	}
	if got := recv(t, h.joinAsync(joinReq(3, strings.Repeat("é", 255), ""))); got.ErrorCode != 0 {
		t.Fatalf("255-character group id %d", got.ErrorCode)
	}
	if got := recv(t, h.joinAsync(joinReq(3, "g1", ""))); got.ErrorCode != 0 {
		t.Fatalf("second group %d", got.ErrorCode)
	}
	if got := recv(t, h.joinAsync(joinReq(3, "g2", ""))); got.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("group past the ceiling %d", got.ErrorCode)
	}
	if got := recv(t, h.joinAsync(joinReq(3, "g1", "ghost"))); got.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("unknown member id %d", got.ErrorCode)
	}
}

func TestGroupCeilingReclaimsEmptyGroups(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxGroups = 1 })
	a, _ := h.stableSolo("g1")
	h.leave("g1", a) // g1 is now Empty with no members
	if got := recv(t, h.joinAsync(joinReq(3, "g2", ""))); got.ErrorCode != 0 {
		t.Fatalf("an empty group must make room: %d", got.ErrorCode)
	}
}

func TestMemberMetadataKeptVerbatimAndDescribed(t *testing.T) {
	h := newHarness(t, nil)
	req := joinReq(3, "g", "")
	raw := []byte{0, 1, 2, 3, 0xff}
	req.Protocols[0].Metadata = raw
	j := recv(t, h.joinAsync(req))
	raw[0] = 9 // the request buffer is reused by the connection
	h.c.SyncGroup(context.Background(), h.cl, syncReq("g", j.MemberID, j.Generation, map[string]string{j.MemberID: "asg"}))
	dr := kmsg.NewPtrDescribeGroupsRequest()
	dr.Version = 3
	dr.Groups = []string{"g", "unknown"}
	d := h.c.DescribeGroups(context.Background(), h.cl, dr)
	g := d.Groups[0]
	if g.State != "Stable" || g.Protocol != "range" || g.ProtocolType != "consumer" || len(g.Members) != 1 || g.AuthorizedOperations != -2147483648 {
		t.Fatalf("describe %+v", g)
	}
	m := g.Members[0]
	if string(m.ProtocolMetadata) != string([]byte{0, 1, 2, 3, 0xff}) || string(m.MemberAssignment) != "asg" || m.ClientID != "cli" || m.ClientHost != "/127.0.0.1" {
		t.Fatalf("member %+v", m)
	}
	if u := d.Groups[1]; u.State != "Dead" || u.ErrorCode != 0 {
		t.Fatalf("unknown group %+v", u)
	}
}

func TestRestartSurvivorsGetUnknownMemberAndResume(t *testing.T) {
	h := newHarness(t, nil)
	a, gen := h.stableSolo("g")
	if c := h.commit(commitReq("g", a, gen, "orders", map[int32]int64{0: 42})); c[0] != 0 {
		t.Fatalf("commit %d", c[0])
	}
	// A new process over the same store knows no members.
	h.c = New(h.c.cfg)
	if code := h.heartbeat("g", a, gen); code != kerr.UnknownMemberID.Code {
		t.Fatalf("survivor heartbeat after restart %d", code)
	}
	if f := h.fetch("g", "orders", 0); f.Topics[0].Partitions[0].Offset != 42 {
		t.Fatalf("offset after restart %+v", f.Topics[0].Partitions[0])
	}
	if r := recv(t, h.joinAsync(joinReq(3, "g", ""))); r.ErrorCode != 0 {
		t.Fatalf("rejoin %d", r.ErrorCode)
	}
}

func TestIdentitiesAreSeparateGroups(t *testing.T) {
	h := newHarness(t, nil)
	a, gen := h.stableSolo("orders")
	h.cl.Identity = "tenant-b"
	if code := h.heartbeat("orders", a, gen); code != kerr.UnknownMemberID.Code {
		t.Fatalf("another identity's member %d", code)
	}
	if r := recv(t, h.joinAsync(joinReq(3, "orders", ""))); r.ErrorCode != 0 || r.Generation != 1 {
		t.Fatalf("second tenant's group %+v", r)
	}
}

func TestJoinContextEndLeavesMemberToSessionExpiry(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.JoinDelay = time.Second })
	ctx, cancel := context.WithCancel(context.Background())
	out := answeredOrParked(h, "g", "JoinGroup", func() *kmsg.JoinGroupResponse {
		return h.c.JoinGroup(ctx, h.cl, joinReq(3, "g", ""))
	})
	cancel()
	if r := recv(t, out); r.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("abandoned join %d", r.ErrorCode)
	}
	h.clock.Advance(time.Second) // the join completes without a reader
	if h.state("g") != "CompletingRebalance" {
		t.Fatalf("state %s", h.state("g"))
	}
	h.clock.Advance(testSession)
	if h.state("g") != "Empty" {
		t.Fatalf("the silent member must expire, state %s", h.state("g"))
	}
}

func TestEmptyGroupIDRules(t *testing.T) {
	h := newHarness(t, nil)
	// Membership APIs refuse an empty group id; the offset APIs take it, as
	// Kafka's do.
	if s := h.c.SyncGroup(context.Background(), h.cl, syncReq("", "m", 1, nil)); s.ErrorCode != kerr.InvalidGroupID.Code {
		t.Fatalf("sync %d", s.ErrorCode)
	}
	if c := h.heartbeat("", "m", 1); c != kerr.InvalidGroupID.Code {
		t.Fatalf("heartbeat %d", c)
	}
	if c := h.leave("", "m"); c != kerr.InvalidGroupID.Code {
		t.Fatalf("leave %d", c)
	}
	if c := h.commit(commitReq("", "", -1, "orders", map[int32]int64{0: 3})); c[0] != 0 {
		t.Fatalf("commit %d", c[0])
	}
	if f := h.fetch("", "orders", 0); f.ErrorCode != 0 || f.Topics[0].Partitions[0].Offset != 3 {
		t.Fatalf("fetch %+v", f.Topics[0].Partitions[0])
	}
}

func TestDescribeOutsideStableOmitsMemberBytes(t *testing.T) {
	h := newHarness(t, nil)
	j := recv(t, h.joinAsync(joinReq(3, "g", ""))) // CompletingRebalance
	dr := kmsg.NewPtrDescribeGroupsRequest()
	dr.Groups = []string{"g"}
	d := h.c.DescribeGroups(context.Background(), h.cl, dr).Groups[0]
	if d.State != "CompletingRebalance" || d.Protocol != "" || len(d.Members) != 1 || d.Members[0].MemberID != j.MemberID || d.Members[0].ProtocolMetadata != nil {
		t.Fatalf("describe %+v", d)
	}
}

func TestLeaveOfHandedOutMemberIDCompletesTheJoin(t *testing.T) {
	h := newHarness(t, nil)
	a, gen := h.stableSolo("g")
	pendingID := recv(t, h.joinAsync(joinReq(4, "g", ""))).MemberID // MEMBER_ID_REQUIRED
	ar := h.joinAsync(joinReq(3, "g", a))                           // leader rejoin opens a rebalance
	pending(t, ar)                                                  // the handed-out id is still outstanding
	if c := h.leave("g", pendingID); c != 0 {
		t.Fatalf("leave of a pending id %d", c)
	}
	if r := recv(t, ar); r.ErrorCode != 0 || r.Generation != gen+1 {
		t.Fatalf("join after the pending id left %+v", r)
	}
}

func TestCloseAnswersParkedRequestsAtOnce(t *testing.T) {
	h := newHarness(t, nil)
	a, gen := h.stableSolo("g")
	bj := h.joinAsync(joinReq(3, "g", "")) // parked until a rejoins
	h.c.Close()
	if r := recv(t, bj); r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("parked join after Close %d", r.ErrorCode)
	}
	if r := recv(t, h.joinAsync(joinReq(3, "g", a))); r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("join after Close %d", r.ErrorCode)
	}
	// A member of the current generation can still commit its last offsets.
	if c := h.commit(commitReq("g", a, gen, "orders", map[int32]int64{0: 5})); c[0] != 0 {
		t.Fatalf("commit after Close %d", c[0])
	}
}

// TestGroupCeilingSharedPerIdentity (issue 11, item 12): an identity
// creating groups without end fills its share of the ceiling (a quarter by
// default) and no more, so another identity still forms its groups; past
// its share an identity's own idle group makes room.
func TestGroupCeilingSharedPerIdentity(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxGroups = 8 })
	join := func(identity, group string) *kmsg.JoinGroupResponse {
		h.cl.Identity = identity
		return recv(t, h.joinAsync(joinReq(3, group, "")))
	}
	var first string
	for i := range 20 {
		r := join("tenant:flood", fmt.Sprintf("flood-%d", i))
		switch {
		case i < 2 && r.ErrorCode != 0:
			t.Fatalf("flooding identity's group %d: %v", i, kerr.ErrorForCode(r.ErrorCode))
		case i >= 2 && r.ErrorCode != kerr.CoordinatorNotAvailable.Code:
			t.Fatalf("flooding identity's group %d: %v, want COORDINATOR_NOT_AVAILABLE past its share", i, kerr.ErrorForCode(r.ErrorCode))
		}
		if i == 0 {
			first = r.MemberID
		}
	}
	for i := range 2 {
		if r := join("tenant:quiet", fmt.Sprintf("quiet-%d", i)); r.ErrorCode != 0 {
			t.Fatalf("another identity's group %d under the flood: %v", i, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	h.cl.Identity = "tenant:flood"
	if code := h.leave("flood-0", first); code != 0 {
		t.Fatalf("leave: %v", kerr.ErrorForCode(code))
	}
	if r := join("tenant:flood", "flood-next"); r.ErrorCode != 0 {
		t.Fatalf("the flooding identity's idle group must make room for its next: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}
