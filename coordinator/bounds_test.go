package coordinator

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
)

// A group holds at most MaxGroupSize seats, members and member ids handed
// out with MEMBER_ID_REQUIRED alike: a flood of first JoinGroups v4 is
// refused GROUP_MAX_SIZE_REACHED past it, as Kafka's group.max.size
// refuses a new member, while other groups still admit theirs; the seats
// come back when the handed-out ids expire. A v3 first join, admitted as a
// member at once, counts the same way.
func TestGroupMaxSize(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxGroupSize = 3 })
	for i := range 3 {
		if j := recv(t, h.joinAsync(joinReq(4, "g", ""))); j.ErrorCode != kerr.MemberIDRequired.Code {
			t.Fatalf("first join %d: %d", i, j.ErrorCode)
		}
	}
	if j := recv(t, h.joinAsync(joinReq(4, "g", ""))); j.ErrorCode != kerr.GroupMaxSizeReached.Code || j.MemberID != "" {
		t.Fatalf("a fourth first join into a group of 3 seats: %+v, want GROUP_MAX_SIZE_REACHED", j)
	}
	if j := recv(t, h.joinAsync(joinReq(4, "other", ""))); j.ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("another group's first join: %d", j.ErrorCode)
	}
	h.clock.Advance(testSession) // the handed-out ids expire
	if j := recv(t, h.joinAsync(joinReq(4, "g", ""))); j.ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("a first join once the seats came back: %d", j.ErrorCode)
	}

	h2 := newHarness(t, func(c *Config) { c.MaxGroupSize = 1 })
	h2.stableSolo("solo")
	if j := recv(t, h2.joinAsync(joinReq(3, "solo", ""))); j.ErrorCode != kerr.GroupMaxSizeReached.Code {
		t.Fatalf("a v3 join into a full group: %d, want GROUP_MAX_SIZE_REACHED", j.ErrorCode)
	}
}

// Member ids handed out with MEMBER_ID_REQUIRED are bounded across every
// group: past MaxPendingMembers the oldest is forgotten, so a flood spread
// over many groups costs memory up to the bound and its own ids, not the
// seat of a real client, which comes back with its id at once.
func TestPendingMembersBoundedNodeWide(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxPendingMembers = 5 })
	var ids []string
	for i := range 20 {
		j := recv(t, h.joinAsync(joinReq(4, fmt.Sprintf("flood-%d", i), "")))
		if j.ErrorCode != kerr.MemberIDRequired.Code {
			t.Fatalf("flood join %d: %d", i, j.ErrorCode)
		}
		ids = append(ids, j.MemberID)
	}
	if n := h.c.pending.len(); n != 5 {
		t.Fatalf("%d member ids pending node-wide, want the bound of 5", n)
	}
	testsupport.WaitFor(t, 5*time.Second, "the evicted ids dropped from their groups", func() bool {
		for i := range 15 {
			g := h.c.lookup(h.cl, fmt.Sprintf("flood-%d", i))
			g.mu.Lock()
			n := len(g.pending)
			g.mu.Unlock()
			if n != 0 {
				return false
			}
		}
		return true
	})
	if j := recv(t, h.joinAsync(joinReq(4, "flood-0", ids[0]))); j.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("joining with an evicted id: %d, want UNKNOWN_MEMBER_ID", j.ErrorCode)
	}
	// A real client: its handed-out id is the newest, and it joins.
	id := recv(t, h.joinAsync(joinReq(4, "real", ""))).MemberID
	if j := recv(t, h.joinAsync(joinReq(4, "real", id))); j.ErrorCode != 0 || j.Generation != 1 {
		t.Fatalf("a real client's second join: %+v", j)
	}
	if n := h.c.pending.len(); n != 4 {
		t.Fatalf("%d pending after the real client joined, want 4", n)
	}
}

// A rebalance timeout is clamped to the longest session the coordinator
// admits (QUEEN_KAFKA_GROUP_MAX_SESSION_TIMEOUT_MS): a member asking for
// the int32 maximum (24 days) and never rejoining holds a join phase that
// long at most, not for weeks.
func TestRebalanceTimeoutClamped(t *testing.T) {
	h := newHarness(t, nil) // max session 300 s
	req := joinReq(3, "g", "")
	req.RebalanceTimeoutMillis = math.MaxInt32
	a := recv(t, h.joinAsync(req))
	if a.ErrorCode != 0 {
		t.Fatalf("join: %d", a.ErrorCode)
	}
	b := h.joinAsync(joinReq(3, "g", "")) // opens a rebalance a never rejoins
	// a heartbeats all along (REBALANCE_IN_PROGRESS), so only the join
	// phase's timer can end it.
	for elapsed := time.Duration(0); elapsed < 300*time.Second; elapsed += 5 * time.Second {
		pending(t, b)
		if code := h.heartbeat("g", a.MemberID, a.Generation); code != kerr.RebalanceInProgress.Code {
			t.Fatalf("a heartbeat at %v: %d", elapsed, code)
		}
		h.clock.Advance(5 * time.Second)
	}
	if j := recv(t, b); j.ErrorCode != 0 || len(j.Members) != 1 {
		t.Fatalf("after the clamped 300 s: %+v, want b alone in the next generation", j)
	}
}
