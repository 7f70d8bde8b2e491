package consumergroup

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// simClient is a consumer as the property test models one: it owns what
// its last answer assigned, gives up a partition the moment an answer no
// longer assigns it, and forgets everything when it crashes, leaves or is
// fenced.
type simClient struct {
	name     string
	id       string
	inst     *string
	joined   bool
	crashed  bool
	epoch    int32
	owned    parts
	topics   []string
	reported bool // the last heartbeat reported owned as it is now
	ids      int
}

// TestPropertyNoPartitionOwnedTwice drives random joins, heartbeats (full
// and partial), leaves (for good and static), subscription changes,
// crashes, topic changes and time against one group, checking after every
// step that no partition is owned by two clients (as they see it) nor held
// by two members (as the group sees it), and at the end, once every live
// client has heartbeated the group Stable, that every subscribed partition
// belongs to exactly one member.
func TestPropertyNoPartitionOwnedTwice(t *testing.T) {
	runs := 150
	if testing.Short() {
		runs = 20
	}
	for seed := uint64(1); seed <= uint64(runs); seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { propertyRun(t, seed, 250) })
	}
}

func propertyRun(t *testing.T, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, 848))
	e := newEnv(t)
	e.topics.add("a", 6)
	e.topics.add("b", 3)
	var clients []*simClient
	for i := 0; i < 5; i++ {
		c := &simClient{name: fmt.Sprintf("c%d", i), topics: []string{"a"}}
		if i%2 == 1 {
			s := fmt.Sprintf("inst-%d", i)
			c.inst = &s
		}
		clients = append(clients, c)
	}
	var log []string
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d after %v: %s", seed, log, fmt.Sprintf(format, args...))
	}
	check := func() {
		owner := map[string]string{}
		for _, c := range clients {
			c.owned.each(func(tid topicID, n int32) {
				k := fmt.Sprint(tid, n)
				if o := owner[k]; o != "" {
					fail("partition %v/%d owned by clients %s and %s", tid[:2], n, o, c.name)
				}
				owner[k] = c.name
			})
		}
		if g := e.g(); g != nil {
			g.mu.Lock()
			held := map[string]string{}
			for _, m := range g.members {
				for _, p := range []parts{m.assigned, m.revoking} {
					p.each(func(tid topicID, n int32) {
						k := fmt.Sprint(tid, n)
						if o := held[k]; o != "" {
							g.mu.Unlock()
							fail("partition %v/%d held by members %s and %s", tid[:2], n, o, m.id)
						}
						held[k] = m.id
						if g.owners[tid][n] != m.id {
							g.mu.Unlock()
							fail("owners index says %q for a partition of %s", g.owners[tid][n], m.id)
						}
					})
				}
			}
			g.mu.Unlock()
		}
	}
	apply := func(c *simClient, r *kmsg.ConsumerGroupHeartbeatResponse) {
		switch r.ErrorCode {
		case 0:
		case kerr.UnknownMemberID.Code, kerr.FencedMemberEpoch.Code, kerr.UnreleasedInstanceID.Code, kerr.FencedInstanceID.Code:
			c.owned, c.joined = parts{}, false
			return
		default:
			fail("%s: unexpected code %d", c.name, r.ErrorCode)
		}
		if r.MemberID != nil {
			c.id = *r.MemberID
		}
		c.epoch, c.joined = r.MemberEpoch, true
		if a := assigned(r); r.Assignment != nil {
			c.owned = a
			c.reported = false
		}
	}
	heartbeat := func(c *simClient, full bool) {
		if c.crashed || !c.joined {
			return
		}
		var owned parts
		if full || !c.reported {
			owned = c.owned
		}
		req := hbReq(e.group, c.id, c.epoch, owned)
		req.InstanceID = c.inst
		if owned != nil {
			req.RebalanceTimeoutMillis, req.SubscribedTopicNames = 30000, c.topics
			c.reported = true
		}
		apply(c, e.send(e.m, req))
	}
	join := func(c *simClient) {
		if c.id == "" || c.inst != nil && rng.IntN(2) == 0 {
			c.ids++
			c.id = fmt.Sprintf("%s-%d", c.name, c.ids)
		}
		req := hbReq(e.group, c.id, 0, parts{})
		req.RebalanceTimeoutMillis, req.SubscribedTopicNames, req.InstanceID = 30000, c.topics, c.inst
		c.owned, c.crashed = parts{}, false
		apply(c, e.send(e.m, req))
		c.reported = true
	}
	tick := func(d time.Duration) {
		for d > 0 {
			step := min(d, 4*time.Second)
			e.advance(step)
			d -= step
			for _, c := range clients {
				heartbeat(c, true)
			}
			check()
		}
	}
	for i := 0; i < steps; i++ {
		c := clients[rng.IntN(len(clients))]
		switch op := rng.IntN(20); {
		case op < 3:
			log = append(log, "join "+c.name)
			if !c.joined {
				join(c)
			}
		case op < 11:
			log = append(log, "hb "+c.name)
			heartbeat(c, rng.IntN(2) == 0)
		case op == 11:
			log = append(log, "leave "+c.name)
			if c.joined && !c.crashed {
				c.owned = parts{}
				epoch := int32(leaveEpoch)
				if c.inst != nil && rng.IntN(2) == 0 {
					epoch = staticLeaveEpoch
				}
				req := hbReq(e.group, c.id, epoch, nil)
				req.InstanceID = c.inst
				if r := e.send(e.m, req); r.ErrorCode != 0 && r.ErrorCode != kerr.UnknownMemberID.Code {
					fail("leave: %d", r.ErrorCode)
				}
				c.joined = false
			}
		case op == 12:
			log = append(log, "resubscribe "+c.name)
			if len(c.topics) == 1 {
				c.topics = []string{"a", "b"}
			} else {
				c.topics = []string{"a"}
			}
			c.reported = false
			heartbeat(c, true)
		case op == 13:
			log = append(log, "crash "+c.name)
			c.crashed, c.owned = true, parts{}
			c.joined = false
		case op == 14:
			log = append(log, "session")
			tick(50 * time.Second)
		case op == 15:
			log = append(log, "widen")
			e.topics.mu.Lock()
			if e.topics.topics[1].Partitions < 8 {
				e.topics.topics[1].Partitions++
			}
			e.topics.mu.Unlock()
		default:
			log = append(log, "time")
			tick(time.Duration(rng.IntN(3000)) * time.Millisecond)
		}
		check()
	}
	// Quiesce: live clients heartbeat until the group is Stable.
	for _, c := range clients {
		if !c.joined && !c.crashed {
			join(c)
		}
	}
	for round := 0; ; round++ {
		for _, c := range clients {
			heartbeat(c, true)
		}
		check()
		g := e.g()
		if g == nil {
			return // everyone gone
		}
		g.mu.Lock()
		st := g.state()
		g.mu.Unlock()
		if st == StateStable || st == StateEmpty {
			break
		}
		if round > 30 {
			fail("group never settled: %s", st)
		}
		tick(5 * time.Second) // crashed and static-left members expire
	}
	g := e.g()
	g.mu.Lock()
	defer g.mu.Unlock()
	for name, meta := range g.topics {
		subscribed := false
		for _, m := range g.members {
			for _, n := range g.memberTopics(m) {
				subscribed = subscribed || n == name
			}
		}
		if !subscribed {
			continue
		}
		for p := int32(0); p < meta.partitions; p++ {
			n := 0
			for _, m := range g.members {
				if m.assigned.has(meta.id, p) {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("seed %d: stable group: %s/%d assigned to %d members", seed, name, p, n)
			}
		}
	}
}
