package consumergroup

import (
	"time"

	"github.com/queen-mq/queen-kafka/internal/clock"
	"github.com/queen-mq/queen-kafka/internal/groupreg"
)

// memberState is Kafka's MemberState of a consumer-protocol member.
type memberState int8

const (
	// stateStable: the member owns its whole assignment at its epoch.
	stateStable memberState = iota
	// stateUnrevoked: the member must revoke partitions before it may
	// move to the next epoch.
	stateUnrevoked
	// stateUnreleased: the member is at the target epoch but some of its
	// target partitions are still owned by another member.
	stateUnreleased
)

func (s memberState) String() string {
	switch s {
	case stateUnrevoked:
		return "UNREVOKED_PARTITIONS"
	case stateUnreleased:
		return "UNRELEASED_PARTITIONS"
	}
	return "STABLE"
}

// Kafka's special member epochs.
const (
	leaveEpoch       = -1 // a member leaving for good
	staticLeaveEpoch = -2 // a static member leaving temporarily
)

// member is one member of a group; guarded by its group's lock.
type member struct {
	id         string
	instanceID *string
	rack       *string
	clientID   string
	clientHost string

	epoch     int32
	prevEpoch int32
	state     memberState
	rebalance time.Duration // rebalance_timeout_ms: how long it may take to revoke

	names    []string // subscribed_topic_names, sorted
	regex    string   // subscribed_topic_regex, "" none
	assignor string   // server_assignor, "" none

	assigned parts // owned at its epoch (what the member is told)
	revoking parts // still owned, to be given up

	// Timers: the session restarts at every heartbeat; the rebalance
	// timer is armed while the member is asked to revoke.
	session        groupreg.Session
	rebalanceTimer clock.Timer
	rebalanceSeq   uint64
}

func (m *member) stopTimers() {
	m.session.Stop()
	m.cancelRebalance()
}

func (m *member) cancelRebalance() {
	if m.rebalanceTimer != nil {
		m.rebalanceTimer.Stop()
		m.rebalanceTimer = nil
	}
	m.rebalanceSeq++
}

// next is what reconciling a member towards the target gives: Kafka's
// CurrentAssignmentBuilder.build.
type next struct {
	epoch    int32
	state    memberState
	assigned parts
	revoking parts
}

// reconcile is Kafka's CurrentAssignmentBuilder: m towards target at
// targetEpoch, owned being what the member reported owning (nil when the
// heartbeat did not say), ownerOf naming the member that owns a partition
// now ("" when free). A partition is handed to m only once no other member
// owns it, and m keeps the partitions it must give up in revoking, at its
// current epoch, until a heartbeat reports them gone.
func reconcile(m *member, targetEpoch int32, target parts, owned parts, ownedKnown bool, ownerOf func(topicID, int32) string) next {
	cur := next{epoch: m.epoch, state: m.state, assigned: m.assigned, revoking: m.revoking}
	switch m.state {
	case stateStable:
		if m.epoch != targetEpoch {
			return computeNext(m, m.epoch, targetEpoch, target, owned, ownedKnown, ownerOf)
		}
		return cur
	case stateUnrevoked:
		if ownsAny(owned, ownedKnown, m.revoking) {
			return cur
		}
		return computeNext(m, min(m.epoch+1, targetEpoch), targetEpoch, target, owned, ownedKnown, ownerOf)
	default: // unreleased
		return computeNext(m, m.epoch, targetEpoch, target, owned, ownedKnown, ownerOf)
	}
}

// ownsAny is Kafka's ownsRevokedPartitions: true when the member still
// reports one of revoking, or did not report what it owns.
func ownsAny(owned parts, known bool, revoking parts) bool {
	if !known {
		return true
	}
	for t, ps := range owned {
		for _, n := range ps {
			if revoking.has(t, n) {
				return true
			}
		}
	}
	return false
}

func computeNext(m *member, epoch, targetEpoch int32, target parts, owned parts, ownedKnown bool, ownerOf func(topicID, int32) string) next {
	assigned := parts{}
	revoking := parts{}
	pending := parts{}
	unreleased := false
	topics := map[topicID]bool{}
	for t := range target {
		topics[t] = true
	}
	for t := range m.assigned {
		topics[t] = true
	}
	for t := range topics {
		for _, n := range m.assigned[t] {
			if target.has(t, n) {
				assigned.add(t, n)
			} else {
				revoking.add(t, n)
			}
		}
		for _, n := range target[t] {
			if assigned.has(t, n) {
				continue
			}
			if o := ownerOf(t, n); o != "" && o != m.id {
				unreleased = true
				continue
			}
			pending.add(t, n)
		}
	}
	switch {
	case len(revoking) > 0 && ownsAny(owned, ownedKnown, revoking):
		return next{epoch: epoch, state: stateUnrevoked, assigned: assigned, revoking: revoking}
	case len(pending) > 0:
		pending.each(func(t topicID, n int32) { assigned.add(t, n) })
		st := stateStable
		if unreleased {
			st = stateUnreleased
		}
		return next{epoch: targetEpoch, state: st, assigned: assigned, revoking: parts{}}
	case unreleased:
		return next{epoch: targetEpoch, state: stateUnreleased, assigned: assigned, revoking: parts{}}
	}
	return next{epoch: targetEpoch, state: stateStable, assigned: assigned, revoking: parts{}}
}
