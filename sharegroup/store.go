package sharegroup

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strings"

	"github.com/queen-mq/queen-kafka/internal/groupreg"
	"github.com/queen-mq/queen-kafka/queen"
)

// metaRow is qk:sg:<group>:g: the epochs and the subscription metadata.
type metaRow struct {
	Epoch           int32      `json:"epoch"`
	AssignmentEpoch int32      `json:"assignmentEpoch"`
	Topics          []topicRow `json:"topics,omitempty"`
	Node            int32      `json:"node"`
	TS              int64      `json:"ts"`
}

type topicRow struct {
	Name       string `json:"name"`
	ID         string `json:"id"`
	Partitions int32  `json:"partitions"`
}

// memberRow is qk:sg:<group>:m:<member>.
type memberRow struct {
	ID        string             `json:"id"`
	Rack      *string            `json:"rack,omitempty"`
	ClientID  string             `json:"clientId"`
	Host      string             `json:"host"`
	Epoch     int32              `json:"epoch"`
	PrevEpoch int32              `json:"prevEpoch"`
	Names     []string           `json:"names,omitempty"`
	Assigned  map[string][]int32 `json:"assigned,omitempty"` // topic id (hex) to partitions
}

func codeOf(err error) int16 { return groupreg.Code(err) }

func (g *group) metaRow() metaRow {
	r := metaRow{Epoch: g.epoch, AssignmentEpoch: g.assignmentEpoch, Node: g.m.cfg.NodeID, TS: g.m.clock.Now().UnixMilli()}
	for _, n := range sortedNames(g.topics) {
		t := g.topics[n]
		r.Topics = append(r.Topics, topicRow{Name: n, ID: hex.EncodeToString(t.ID[:]), Partitions: t.Partitions})
	}
	return r
}

func memberRowOf(mb *member) memberRow {
	r := memberRow{ID: mb.id, Rack: mb.rack, ClientID: mb.clientID, Host: mb.host, Epoch: mb.epoch, PrevEpoch: mb.prevEpoch, Names: mb.names}
	if len(mb.assigned) > 0 {
		r.Assigned = map[string][]int32{}
		for t, ps := range mb.assigned {
			r.Assigned[hex.EncodeToString(t[:])] = ps
		}
	}
	return r
}

func parseID(s string) ([16]byte, bool) {
	var id [16]byte
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 16 {
		return id, false
	}
	copy(id[:], b)
	return id, true
}

// persist writes what changed since the last write, every call led by the
// compare-and-set of the meta row. A failed write kills g (it is reloaded
// from the store at the next request) and answers its code; a group left
// empty leaves memory (its rows hold all it has). The caller holds g.mu.
func (g *group) persist(ctx context.Context) int16 {
	if !g.metaDirty && len(g.dirty) == 0 && len(g.gone) == 0 {
		return 0
	}
	var ops []queen.KVOp
	for id := range g.dirty {
		if mb := g.members[id]; mb != nil {
			ops = append(ops, groupreg.Put(queen.ShareGroupMemberKey(g.key.ID, id), memberRowOf(mb)))
		}
	}
	for id := range g.gone {
		ops = append(ops, queen.KVOp{Op: queen.OpDelete, NS: queen.Namespace, Key: queen.ShareGroupMemberKey(g.key.ID, id)})
	}
	if err := g.write(ctx, ops, false); err != nil {
		g.m.log.Warn("share group state write failed; the group is reloaded from the store at its next request", "group", g.key.ID, "err", err)
		g.kill()
		g.m.reg.Forget(g.key, g)
		return codeOf(err)
	}
	clear(g.dirty)
	clear(g.gone)
	g.metaDirty = false
	if len(g.members) == 0 {
		g.kill()
		g.m.reg.Forget(g.key, g)
	}
	return 0
}

// write applies ops, led by the compare-and-set of the meta row; a group
// created here, or taken over, first takes the fence (cluster mode).
func (g *group) write(ctx context.Context, ops []queen.KVOp, takeover bool) error {
	var fence *queen.FenceValue
	if g.m.cfg.Fenced && (takeover || g.metaVer < 0) {
		fence = &queen.FenceValue{Node: g.m.cfg.NodeID, Incarnation: g.m.cfg.Incarnation, Generation: g.epoch, TS: g.m.clock.Now().UnixMilli()}
	}
	return groupreg.Write(ctx, g.kv, g.key.ID, groupreg.Put(queen.ShareGroupMetaKey(g.key.ID), g.metaRow()), &g.metaVer, fence, ops)
}

// load reads a group's rows (nil when it has none) and takes it over: the
// meta row is rewritten by compare-and-set, and in a cluster the fence
// moves, so that the previous owner's next write fails. Member sessions
// start afresh from now, as Kafka's do when a coordinator loads its groups.
func (m *Manager) load(ctx context.Context, k groupKey, kv KV) (*group, int16) {
	rows, err := queen.ReadPrefix(ctx, kv, queen.ShareGroupPrefix(k.ID), 1000, false)
	if err != nil {
		m.log.Warn("loading share group failed", "group", k.ID, "err", err)
		return nil, codeOf(err)
	}
	metaKey := queen.ShareGroupMetaKey(k.ID)
	memberPrefix := queen.ShareGroupPrefix(k.ID) + "m:"
	g := newGroup(m, k, kv)
	found := false
	for _, r := range rows {
		switch {
		case r.Key == metaKey:
			var mr metaRow
			if err := json.Unmarshal(r.Value, &mr); err != nil {
				m.log.Error("unreadable share group row; the group starts over", "key", r.Key, "err", err)
			}
			g.epoch, g.assignmentEpoch, g.metaVer = mr.Epoch, mr.AssignmentEpoch, r.Version
			g.topics = map[string]Topic{}
			for _, t := range mr.Topics {
				if id, ok := parseID(t.ID); ok {
					g.topics[t.Name] = Topic{Name: t.Name, ID: id, Partitions: t.Partitions}
				}
			}
			found = true
		case strings.HasPrefix(r.Key, memberPrefix):
			var mr memberRow
			if err := json.Unmarshal(r.Value, &mr); err != nil || mr.ID == "" {
				m.log.Error("unreadable share group member row, skipped", "key", r.Key, "err", err)
				continue
			}
			mb := &member{id: mr.ID, rack: mr.Rack, clientID: mr.ClientID, host: mr.Host, epoch: mr.Epoch, prevEpoch: mr.PrevEpoch, names: mr.Names, assigned: parts{}}
			for t, ps := range mr.Assigned {
				if id, ok := parseID(t); ok {
					mb.assigned[id] = ps
				}
			}
			g.members[mb.id] = mb
		}
	}
	if !found {
		return nil, 0
	}
	_, g.session = m.settings(ctx, kv, k.ID)
	now := m.clock.Now()
	for _, mb := range g.members {
		mb.session.LastSeen = now
		g.armSession(mb)
	}
	g.metaDirty = true
	if err := g.write(ctx, nil, true); err != nil {
		m.log.Warn("taking over share group failed", "group", k.ID, "err", err)
		g.kill()
		return nil, codeOf(err)
	}
	g.metaDirty = false
	m.log.Info("share group loaded from the store", "group", k.ID, "epoch", g.epoch, "assignment_epoch", g.assignmentEpoch, "members", len(g.members))
	return g, 0
}

// deleteRows deletes every row of g, the meta row last, so that a delete
// cut short leaves a group that still loads (and can be deleted again).
func (g *group) deleteRows(ctx context.Context, kv KV) int16 {
	rows, err := queen.ReadPrefix(ctx, kv, queen.ShareGroupPrefix(g.key.ID), 1000, true)
	if err != nil {
		return codeOf(err)
	}
	meta := queen.ShareGroupMetaKey(g.key.ID)
	var ops []queen.KVOp
	for _, r := range rows {
		if r.Key != meta {
			ops = append(ops, queen.KVOp{Op: queen.OpDelete, NS: queen.Namespace, Key: r.Key})
		}
	}
	ops = append(ops, queen.KVOp{Op: queen.OpDelete, NS: queen.Namespace, Key: meta})
	for len(ops) > 0 {
		n := min(len(ops), maxOpsPerCall)
		if _, err := kv.KV(ctx, ops[:n]); err != nil {
			return codeOf(err)
		}
		ops = ops[n:]
	}
	return 0
}

func sortedNames(topics map[string]Topic) []string {
	out := make([]string, 0, len(topics))
	for n := range topics {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
