package sharegroup

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
)

// simShare is a share consumer as the property test models one (KIP-1082:
// its member id is its own for life): it holds what its answers assigned,
// rejoins with epoch 0 after a refusal that fences it, and may stop
// heartbeating (a crash) and come back later with the epoch it had.
type simShare struct {
	id       string
	joined   bool
	crashed  bool
	epoch    int32
	names    []string
	assigned parts
	// fenced: the group removed it (OnMemberGone) since its last join, so
	// a heartbeat at its old epoch must be refused.
	fenced bool
}

// TestPropertyMembership drives random joins, heartbeats, subscription
// changes, leaves, crashes, recoveries, topic changes, time and owner
// moves between two nodes against one group, and checks after every
// step: a member fenced by session expiry or a leave is never answered
// success at its old epoch; a member's epoch never goes back while it is
// the same member; the group epoch never goes back, across owner moves;
// no answer's member epoch exceeds the group epoch; and, once every live
// client has heartbeated after the catalogue settled, every live member's
// assignment is every partition of every topic it subscribes to, and the
// group's members are exactly the live clients.
func TestPropertyMembership(t *testing.T) {
	runs := 120
	if testing.Short() {
		runs = 20
	}
	for seed := uint64(1); seed <= uint64(runs); seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { membershipRun(t, seed, 300) })
	}
}

func membershipRun(t *testing.T, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, 932))
	e := newEnv(t)
	e.topics.add("a", 3)
	e.topics.add("b", 2)
	o1, o2 := testsupport.NewOwners(1, 1), testsupport.NewOwners(2, 1)
	nodes := []*Manager{e.manager(o1, true, 1), e.manager(o2, true, 2)}
	owner := 0
	var clients []*simShare
	for i := range 5 {
		clients = append(clients, &simShare{id: fmt.Sprintf("member-%d", i), names: []string{"a"}})
	}
	byID := map[string]*simShare{}
	for _, c := range clients {
		byID[c.id] = c
	}
	seenGone := 0
	noteGone := func() {
		for _, g := range e.goneCalls()[seenGone:] {
			if c := byID[strings.TrimPrefix(g, "g/")]; c != nil {
				c.fenced = true
			}
		}
		seenGone = len(e.goneCalls())
	}
	var groupEpoch int32
	topicSets := [][]string{{"a"}, {"b"}, {"a", "b"}, {"a", "c"}}

	send := func(c *simShare, req *kmsg.ShareGroupHeartbeatRequest) {
		t.Helper()
		wasFenced, prevEpoch := c.fenced && req.MemberEpoch > 0, c.epoch
		r := e.on(nodes[owner], req)
		noteGone()
		switch {
		case r.ErrorCode == kerr.NotCoordinator.Code || r.ErrorCode == kerr.CoordinatorNotAvailable.Code:
			return
		case req.MemberEpoch == leaveEpoch:
			c.joined, c.epoch, c.assigned, c.fenced = false, 0, nil, false
			return
		case r.ErrorCode == kerr.FencedMemberEpoch.Code || r.ErrorCode == kerr.UnknownMemberID.Code:
			c.joined, c.epoch, c.assigned, c.fenced = false, 0, nil, false
			return
		case r.ErrorCode != 0:
			t.Fatalf("seed %d: %s: unexpected error %d %v", seed, c.id, r.ErrorCode, r.ErrorMessage)
		}
		if wasFenced {
			t.Fatalf("seed %d: %s was fenced and still answered success at epoch %d", seed, c.id, req.MemberEpoch)
		}
		if req.MemberEpoch > 0 && r.MemberEpoch < prevEpoch {
			t.Fatalf("seed %d: %s epoch went back %d -> %d", seed, c.id, prevEpoch, r.MemberEpoch)
		}
		c.joined, c.epoch = true, r.MemberEpoch
		if req.MemberEpoch == 0 {
			c.fenced = false
		}
		if a := assigned(r); a != nil {
			c.assigned = a
		}
	}
	hb := func(c *simShare, names []string) {
		epoch := c.epoch
		if !c.joined {
			epoch = 0
			if names == nil {
				names = c.names
			}
		}
		if names != nil {
			c.names = names
		}
		send(c, hbReq("g", c.id, epoch, names...))
	}
	checkGroup := func() {
		t.Helper()
		req := kmsg.NewPtrShareGroupDescribeRequest()
		req.GroupIDs = []string{"g"}
		d := nodes[owner].Describe(context.Background(), e.client(), req).Groups[0]
		noteGone()
		if d.ErrorCode != 0 {
			return // not created yet, or the store moved under it
		}
		if d.GroupEpoch < groupEpoch {
			t.Fatalf("seed %d: group epoch went back %d -> %d", seed, groupEpoch, d.GroupEpoch)
		}
		groupEpoch = d.GroupEpoch
		for _, m := range d.Members {
			if m.MemberEpoch > d.GroupEpoch || d.AssignmentEpoch > d.GroupEpoch {
				t.Fatalf("seed %d: member %s epoch %d, assignment epoch %d, group epoch %d", seed, m.MemberID, m.MemberEpoch, d.AssignmentEpoch, d.GroupEpoch)
			}
		}
	}

	for range steps {
		c := clients[rng.IntN(len(clients))]
		switch p := rng.IntN(100); {
		case p < 40:
			if !c.crashed {
				hb(c, nil)
			}
		case p < 50:
			if !c.crashed {
				hb(c, topicSets[rng.IntN(len(topicSets))])
			}
		case p < 55:
			if c.joined && !c.crashed {
				send(c, hbReq("g", c.id, leaveEpoch))
			}
		case p < 62:
			c.crashed = true
		case p < 72:
			c.crashed = false
		case p < 87:
			e.clock.Advance(time.Duration(rng.IntN(20_000)) * time.Millisecond)
			noteGone()
		case p < 92:
			// The owner moves; the old one sees it and drops the group.
			owner = 1 - owner
			o1.Set(int32(owner + 1))
			o2.Set(int32(owner + 1))
			nodes[1-owner].DropUnowned()
		default:
			e.topics.add([]string{"a", "b", "c"}[rng.IntN(3)], int32(1+rng.IntN(4)))
		}
		checkGroup()
	}

	// Settle: every crashed client recovers, the catalogue is seen, and
	// every client heartbeats until it is a member at the group's epoch.
	for _, c := range clients {
		c.crashed = false
	}
	e.clock.Advance(topicRefresh)
	for range 4 {
		for _, c := range clients {
			if c.joined || c.names != nil {
				hb(c, nil)
			}
		}
	}
	checkGroup()
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.GroupIDs = []string{"g"}
	d := nodes[owner].Describe(context.Background(), e.client(), req).Groups[0]
	var live, members []string
	for _, c := range clients {
		if c.joined {
			live = append(live, c.id)
			want := parts{}
			for _, tp := range e.topics.topics {
				if slices.Contains(c.names, tp.Name) {
					want[tp.ID] = all(tp.Partitions)
				}
			}
			if !c.assigned.equal(want) {
				t.Fatalf("seed %d: %s subscribed to %v holds %v, want %v", seed, c.id, c.names, c.assigned, want)
			}
			if c.epoch != d.GroupEpoch {
				t.Fatalf("seed %d: %s at epoch %d, group at %d", seed, c.id, c.epoch, d.GroupEpoch)
			}
		}
	}
	for _, m := range d.Members {
		members = append(members, m.MemberID)
	}
	if !slices.Equal(live, members) {
		t.Fatalf("seed %d: live clients %v, group members %v", seed, live, members)
	}
}
