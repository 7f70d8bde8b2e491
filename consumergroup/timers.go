package consumergroup

import (
	"context"
	"strconv"
)

// armSession (re)starts m's session timer from its last heartbeat.
func (g *group) armSession(m *member) {
	m.session.Arm(g.m.clock, g.m.cfg.SessionTimeout, func(seq uint64) { g.sessionFired(m, seq) })
}

// sessionFired removes m when its session ran out: Kafka's session
// timeout fences the member and bumps the group epoch.
func (g *group) sessionFired(m *member, seq uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.dead || g.members[m.id] != m || !m.session.Expired(seq, g.m.clock, g.m.cfg.SessionTimeout) {
		return
	}
	g.m.log.Info("consumer group member session expired", "group", g.key.ID, "member", m.id, "instance_id", strOr(m.instanceID), "session_timeout", g.m.cfg.SessionTimeout)
	g.fence(m, "member "+m.id+" session expired")
}

// armRebalance gives m its rebalance timeout to revoke what it was asked
// to, at its current epoch.
func (g *group) armRebalance(m *member) {
	m.cancelRebalance()
	seq, epoch := m.rebalanceSeq, m.epoch
	m.rebalanceTimer = g.m.clock.AfterFunc(m.rebalance, func() { g.rebalanceFired(m, seq, epoch) })
}

// rebalanceFired fences m if it still has not revoked: Kafka's
// consumer-group rebalance timeout.
func (g *group) rebalanceFired(m *member, seq uint64, epoch int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.dead || seq != m.rebalanceSeq || g.members[m.id] != m {
		return
	}
	m.rebalanceTimer = nil
	if m.state != stateUnrevoked || m.epoch != epoch {
		return
	}
	g.m.log.Info("consumer group member fenced: it did not revoke its partitions within its rebalance timeout", "group", g.key.ID, "member", m.id, "rebalance_timeout", m.rebalance)
	g.fence(m, "member "+m.id+" failed to revoke partitions within "+strconv.FormatInt(m.rebalance.Milliseconds(), 10)+"ms")
}

// fence removes m, bumps the epoch and stores it, from a timer.
func (g *group) fence(m *member, reason string) {
	g.removeMember(m)
	g.bump(reason)
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	g.persist(ctx)
}

func strOr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
