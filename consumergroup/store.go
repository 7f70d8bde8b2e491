package consumergroup

import (
	"context"
	"encoding/json"
	"time"

	"github.com/queen-mq/queen-kafka/internal/groupreg"
	"github.com/queen-mq/queen-kafka/queen"
)

// metaRow is qk:cg:<group>:g.
type metaRow struct {
	Epoch           int32  `json:"epoch"`
	AssignmentEpoch int32  `json:"assignmentEpoch"`
	TopicsHash      uint64 `json:"topicsHash,string"`
	Node            int32  `json:"node"`
	TS              int64  `json:"ts"`
}

// memberRow is qk:cg:<group>:m:<member>.
type memberRow struct {
	ID          string            `json:"id"`
	Instance    *string           `json:"instance,omitempty"`
	Rack        *string           `json:"rack,omitempty"`
	ClientID    string            `json:"clientId"`
	Host        string            `json:"host"`
	Epoch       int32             `json:"epoch"`
	PrevEpoch   int32             `json:"prevEpoch"`
	State       int8              `json:"state"`
	RebalanceMs int64             `json:"rebalanceMs"`
	Names       []string          `json:"names,omitempty"`
	Regex       string            `json:"regex,omitempty"`
	Assignor    string            `json:"assignor,omitempty"`
	Assigned    map[string]string `json:"assigned,omitempty"`
	Revoking    map[string]string `json:"revoking,omitempty"`
	Target      map[string]string `json:"target,omitempty"`
}

func codeOf(err error) int16 { return groupreg.Code(err) }

func (g *group) metaRow() metaRow {
	return metaRow{Epoch: g.epoch, AssignmentEpoch: g.assignmentEpoch, TopicsHash: g.topicsHash, Node: g.m.cfg.NodeID, TS: g.m.clock.Now().UnixMilli()}
}

func (g *group) memberRow(m *member) memberRow {
	return memberRow{ID: m.id, Instance: m.instanceID, Rack: m.rack, ClientID: m.clientID, Host: m.clientHost,
		Epoch: m.epoch, PrevEpoch: m.prevEpoch, State: int8(m.state), RebalanceMs: m.rebalance.Milliseconds(),
		Names: m.names, Regex: m.regex, Assignor: m.assignor,
		Assigned: encodeParts(m.assigned), Revoking: encodeParts(m.revoking), Target: encodeParts(g.target[m.id])}
}

// persist writes what changed since the last write, every call led by the
// compare-and-set of the meta row (and, the first time, the fence). A
// failed write kills g (it is reloaded from the store at the next
// request) and answers its code. The caller holds g.mu.
func (g *group) persist(ctx context.Context) int16 {
	if !g.rows.Pending() {
		return 0
	}
	ops := g.rows.Ops(func(id string) string { return queen.ConsumerGroupMemberKey(g.key.ID, id) }, func(id string) (any, bool) {
		m := g.members[id]
		if m == nil {
			return nil, false
		}
		return g.memberRow(m), true
	})
	if err := g.write(ctx, ops, false); err != nil {
		code := codeOf(err)
		g.m.log.Warn("consumer group state write failed; the group is reloaded from the store at its next request", "group", g.key.ID, "err", err)
		g.Kill()
		g.m.forget(g)
		return code
	}
	g.rows.Written()
	g.publish()
	if len(g.members) == 0 {
		// An empty group holds nothing its rows do not: it leaves memory
		// (so memory holds only groups with members) and is loaded again
		// from the store when it is next named.
		g.Kill()
		g.m.forget(g)
	}
	return 0
}

// write applies ops, led by the compare-and-set of the meta row; a group
// created here, or taken over, first takes the fence (cluster mode).
func (g *group) write(ctx context.Context, ops []queen.KVOp, takeover bool) error {
	meta := groupreg.Put(queen.ConsumerGroupMetaKey(g.key.ID), g.metaRow())
	return g.m.owner.Write(ctx, g.kv, g.key.ID, meta, &g.rows, takeover, g.epoch, g.m.clock.Now(), ops)
}

// deleteRows deletes every row of g (an empty group given up).
func (g *group) deleteRows(ctx context.Context, kv KV) int16 {
	return codeOf(groupreg.Delete(ctx, kv, queen.ConsumerGroupPrefix(g.key.ID), queen.ConsumerGroupMetaKey(g.key.ID)))
}

// load reads a group's rows (nil when it has none) and takes it over: the
// meta row is rewritten by compare-and-set, and in a cluster the fence
// moves, so that the previous owner's next state write or offset commit
// fails. Member sessions start afresh from now, as Kafka's do when a
// coordinator loads its groups.
func (m *Manager) load(ctx context.Context, cl Client, id string) (*group, int16) {
	kv := m.kvFor(cl)
	meta, members, err := groupreg.Read(ctx, kv, queen.ConsumerGroupPrefix(id), queen.ConsumerGroupMetaKey(id))
	if err != nil {
		m.log.Warn("loading consumer group failed", "group", id, "err", err)
		return nil, codeOf(err)
	}
	if meta == nil {
		return nil, 0
	}
	g := newGroup(m, groupKey{Identity: cl.Identity, ID: id}, kv)
	var mr metaRow
	if err := json.Unmarshal(meta.Value, &mr); err != nil {
		m.log.Error("unreadable consumer group row; the group starts over", "key", meta.Key, "err", err)
	}
	g.epoch, g.assignmentEpoch, g.topicsHash, g.rows.Ver = mr.Epoch, mr.AssignmentEpoch, mr.TopicsHash, meta.Version
	for _, r := range members {
		var mr memberRow
		if err := json.Unmarshal(r.Value, &mr); err != nil || mr.ID == "" {
			m.log.Error("unreadable consumer group member row, skipped", "key", r.Key, "err", err)
			continue
		}
		g.loadMember(mr)
	}
	if !g.targetsDisjoint() {
		// A write cut between calls (a group of more members than one
		// call carries) left targets of two epochs: compute a new one.
		g.epoch++
		m.log.Warn("consumer group loaded with overlapping target assignments; bumping its epoch", "group", id, "epoch", g.epoch)
	}
	now := m.clock.Now()
	for _, mb := range g.members {
		mb.session.LastSeen = now
		g.armSession(mb)
		if mb.state == stateUnrevoked {
			g.armRebalance(mb)
		}
	}
	g.rows.MetaDirty = true
	if err := g.write(ctx, nil, true); err != nil {
		m.log.Warn("taking over consumer group failed", "group", id, "err", err)
		g.Kill()
		return nil, codeOf(err)
	}
	g.rows.MetaDirty = false
	g.publish()
	m.log.Info("consumer group loaded from the store", "group", id, "epoch", g.epoch, "assignment_epoch", g.assignmentEpoch, "members", len(g.members))
	return g, 0
}

func (g *group) loadMember(r memberRow) {
	assigned, ok1 := decodeParts(r.Assigned)
	revoking, ok2 := decodeParts(r.Revoking)
	target, ok3 := decodeParts(r.Target)
	if !ok1 || !ok2 || !ok3 {
		g.m.log.Error("unreadable partitions in consumer group member row, skipped", "group", g.key.ID, "member", r.ID)
		return
	}
	m := &member{id: r.ID, instanceID: r.Instance, rack: r.Rack, clientID: r.ClientID, clientHost: r.Host,
		epoch: r.Epoch, prevEpoch: r.PrevEpoch, state: memberState(r.State), rebalance: time.Duration(r.RebalanceMs) * time.Millisecond,
		names: r.Names, regex: r.Regex, assignor: r.Assignor}
	g.members[m.id] = m
	if m.instanceID != nil {
		g.statics[*m.instanceID] = m.id
	}
	g.target[m.id] = target
	g.setOwned(m, assigned, revoking)
}

// targetsDisjoint reports whether no partition is in two members' targets.
func (g *group) targetsDisjoint() bool {
	seen := map[topicID]map[int32]bool{}
	ok := true
	for _, p := range g.target {
		p.each(func(t topicID, n int32) {
			if seen[t] == nil {
				seen[t] = map[int32]bool{}
			}
			if seen[t][n] {
				ok = false
			}
			seen[t][n] = true
		})
	}
	return ok
}
