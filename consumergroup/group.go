package consumergroup

import (
	"hash/fnv"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/assignor"
	"github.com/queen-mq/queen-kafka/internal/groupreg"
)

// Group states as ListGroups and ConsumerGroupDescribe spell them
// (Kafka's ConsumerGroup.ConsumerGroupState).
const (
	StateEmpty       = "Empty"
	StateAssigning   = "Assigning"
	StateReconciling = "Reconciling"
	StateStable      = "Stable"
	StateDead        = "Dead"
)

type groupKey = groupreg.Key

// topicMeta is a subscribed topic as the target assignment saw it.
type topicMeta struct {
	id         topicID
	partitions int32
}

// group is one consumer-protocol group; everything below mu is guarded by
// it, KV writes included (a heartbeat is answered only once what it
// changed is stored, as Kafka answers only once its records are written).
type group struct {
	m   *Manager
	key groupKey
	kv  KV // the credential the group's own writes (timeouts) carry

	mu              sync.Mutex
	dead            bool
	epoch           int32
	assignmentEpoch int32
	members         map[string]*member
	statics         map[string]string            // instance id -> member id
	target          map[string]parts             // member id -> target assignment
	owners          map[topicID]map[int32]string // partition -> member owning it (assigned or revoking)
	topics          map[string]topicMeta         // subscribed topics by name, when the target was computed
	topicsHash      uint64                       // of topics
	regexes         map[string][]string          // resolved subscribed_topic_regex -> topic names
	refreshed       time.Time                    // when topics were last listed
	rows            groupreg.Rows                // what the next write writes, and the qk:cg:…:g row's version

	// view is every member's epoch as last stored, published after each
	// write, so that the member checks of commits and fetches read it
	// without waiting for the group's lock (held across Queen calls).
	view atomic.Pointer[epochView]
}

// epochView is a group's member epochs as stored; dead once the group
// object is no longer this node's.
type epochView struct {
	epochs map[string]int32
	dead   bool
}

// publish stores the member epochs the group holds now in view. The
// caller holds g.mu.
func (g *group) publish() {
	v := &epochView{epochs: make(map[string]int32, len(g.members)), dead: g.dead}
	for id, m := range g.members {
		v.epochs[id] = m.epoch
	}
	g.view.Store(v)
}

func newGroup(m *Manager, k groupKey, kv KV) *group {
	return &group{m: m, key: k, kv: kv, members: map[string]*member{}, statics: map[string]string{},
		target: map[string]parts{}, owners: map[topicID]map[int32]string{}, regexes: map[string][]string{}}
}

// state is Kafka's ConsumerGroup.maybeUpdateGroupState.
func (g *group) state() string {
	switch {
	case g.dead:
		return StateDead
	case len(g.members) == 0:
		return StateEmpty
	case g.epoch != g.assignmentEpoch:
		return StateAssigning
	}
	for _, m := range g.members {
		if m.epoch != g.assignmentEpoch || m.state != stateStable {
			return StateReconciling
		}
	}
	return StateStable
}

func (g *group) ownerOf(t topicID, n int32) string { return g.owners[t][n] }

// setOwned replaces m's owned partitions (assigned and revoking) in the
// owners index. A partition another member still owns is never taken: that
// would be the double ownership revocation exists to prevent, and it is
// logged as the bug it would be.
func (g *group) setOwned(m *member, assigned, revoking parts) {
	g.release(m)
	m.assigned, m.revoking = assigned, revoking
	for _, p := range []parts{assigned, revoking} {
		p.each(func(t topicID, n int32) {
			byP := g.owners[t]
			if byP == nil {
				byP = map[int32]string{}
				g.owners[t] = byP
			}
			if o, ok := byP[n]; ok && o != m.id {
				g.m.log.Error("consumer group invariant broken: partition given to a member while another owns it", "group", g.key.ID, "partition", n, "owner", o, "member", m.id)
			}
			byP[n] = m.id
		})
	}
}

// release takes m's partitions out of the owners index.
func (g *group) release(m *member) {
	for _, p := range []parts{m.assigned, m.revoking} {
		p.each(func(t topicID, n int32) {
			if g.owners[t][n] == m.id {
				delete(g.owners[t], n)
				if len(g.owners[t]) == 0 {
					delete(g.owners, t)
				}
			}
		})
	}
}

// markDirty marks member id's row to be written.
func (g *group) markDirty(id string) { g.rows.Put(id) }

// bump is a new group epoch: the target assignment is recomputed at the
// next heartbeat that reaches the group.
func (g *group) bump(reason string) {
	g.epoch++
	g.rows.MetaDirty = true
	g.m.stats.rebalances.Add(1)
	g.m.log.Info("consumer group epoch bumped", "group", g.key.ID, "epoch", g.epoch, "reason", reason)
}

// removeMember takes m out of the group; its partitions become free.
func (g *group) removeMember(m *member) {
	m.stopTimers()
	g.release(m)
	delete(g.members, m.id)
	delete(g.target, m.id)
	if m.instanceID != nil && g.statics[*m.instanceID] == m.id {
		delete(g.statics, *m.instanceID)
	}
	g.rows.Delete(m.id)
}

// subscribedNames is every topic name some member subscribes to, by name
// or through a resolved regular expression.
func (g *group) subscribedNames() []string {
	set := map[string]bool{}
	for _, m := range g.members {
		for _, n := range m.names {
			set[n] = true
		}
		if m.regex != "" {
			for _, n := range g.regexes[m.regex] {
				set[n] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// memberTopics is m's subscription, resolved.
func (g *group) memberTopics(m *member) []string {
	out := slices.Clone(m.names)
	if m.regex != "" {
		out = append(out, g.regexes[m.regex]...)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// refreshTopics lists the catalogue, resolves every member's regular
// expression against it and records the subscribed topics' ids and widths.
// It reports whether the subscription's metadata changed since the target
// assignment was computed (Kafka bumps the group epoch then).
func (g *group) refreshTopics(all []Topic) (changed bool) {
	g.refreshed = g.m.clock.Now()
	byName := make(map[string]Topic, len(all))
	for _, t := range all {
		byName[t.Name] = t
	}
	regexes := map[string][]string{}
	for _, m := range g.members {
		if m.regex == "" {
			continue
		}
		if _, done := regexes[m.regex]; done {
			continue
		}
		// Kafka matches the whole name (Java's Matcher.matches).
		re, err := regexp.Compile(`^(?:` + m.regex + `)$`)
		if err != nil {
			regexes[m.regex] = nil // validated at the heartbeat; a stored one matches nothing
			continue
		}
		var names []string
		for _, t := range all {
			if re.MatchString(t.Name) {
				names = append(names, t.Name)
			}
		}
		sort.Strings(names)
		regexes[m.regex] = names
	}
	g.regexes = regexes
	metas := map[string]topicMeta{}
	for _, n := range g.subscribedNames() {
		if t, ok := byName[n]; ok && t.Partitions > 0 {
			metas[n] = topicMeta{id: t.ID, partitions: t.Partitions}
		}
	}
	h := hashTopics(metas)
	changed = h != g.topicsHash
	g.topics, g.topicsHash = metas, h
	return changed
}

// listing is the catalogue as a heartbeat listed it, before it took the
// group's lock (a listing may wait on Queen, and a commit's member check
// waits on that lock).
type listing struct {
	all []Topic
	err error
}

// listingDue reports whether a heartbeat should list the catalogue: the
// group has not yet, or not for topicRefresh, or the request may change
// the subscription.
func (g *group) listingDue(req *kmsg.ConsumerGroupHeartbeatRequest) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.topics == nil || g.m.clock.Now().Sub(g.refreshed) >= topicRefresh ||
		req.MemberEpoch == 0 || req.SubscribedTopicNames != nil || req.SubscribedTopicRegex != nil
}

// hashTopics fingerprints the subscribed topics' metadata (Kafka's
// metadata hash): names, ids and widths.
func hashTopics(metas map[string]topicMeta) uint64 {
	names := make([]string, 0, len(metas))
	for n := range metas {
		names = append(names, n)
	}
	sort.Strings(names)
	h := fnv.New64a()
	for _, n := range names {
		t := metas[n]
		h.Write([]byte(n))
		h.Write(t.id[:])
		h.Write([]byte(strconv.Itoa(int(t.partitions))))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// preferredAssignor is the assignor most members name (ties to the first
// name in order), or the default when none names one: Kafka's
// ConsumerGroup.preferredServerAssignor.
func (g *group) preferredAssignor() string {
	counts := map[string]int{}
	for _, m := range g.members {
		if m.assignor != "" {
			counts[m.assignor]++
		}
	}
	best := ""
	for name, n := range counts {
		if best == "" || n > counts[best] || n == counts[best] && name < best {
			best = name
		}
	}
	if best == "" {
		return assignor.Default
	}
	return best
}

// computeTarget is Kafka's TargetAssignmentBuilder: every member's
// subscription and current target in, the new target at the group epoch.
func (g *group) computeTarget() {
	a, ok := assignor.ByName(g.preferredAssignor())
	if !ok {
		a = assignor.Uniform()
	}
	byID := map[topicID]string{}
	spec := assignor.Spec{Partitions: map[string]int32{}}
	for n, t := range g.topics {
		spec.Partitions[n] = t.partitions
		byID[t.id] = n
	}
	ids := g.memberIDs()
	for _, id := range ids {
		m := g.members[id]
		am := assignor.Member{ID: id, Topics: g.memberTopics(m), Owned: map[string][]int32{}}
		if m.instanceID != nil {
			am.InstanceID = *m.instanceID
		}
		if m.rack != nil {
			am.Rack = *m.rack
		}
		for t, ps := range g.target[id] {
			if name, ok := byID[t]; ok {
				am.Owned[name] = slices.Clone(ps)
			}
		}
		spec.Members = append(spec.Members, am)
	}
	start := time.Now()
	out := a.Assign(spec)
	g.m.stats.observeAssign(time.Since(start))
	target := make(map[string]parts, len(ids))
	for _, id := range ids {
		p := parts{}
		for name, ps := range out[id] {
			if t, ok := g.topics[name]; ok {
				for _, n := range ps {
					if n >= 0 && n < t.partitions {
						p.add(t.id, n)
					}
				}
			}
		}
		if !p.equal(g.target[id]) {
			g.markDirty(id)
		}
		target[id] = p
	}
	g.target = target
	g.assignmentEpoch = g.epoch
	g.rows.MetaDirty = true
}

// topicName is the name of topic id among the subscribed topics, "" when
// none has it.
func (g *group) topicName(t topicID) string {
	for n, meta := range g.topics {
		if meta.id == t {
			return n
		}
	}
	return ""
}

// memberIDs is the members' ids in order, so that assignment and
// description walk them deterministically.
func (g *group) memberIDs() []string { return slices.Sorted(maps.Keys(g.members)) }
