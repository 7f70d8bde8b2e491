package sharegroup

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"sort"

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
	if !g.rows.Pending() {
		return 0
	}
	ops := g.rows.Ops(func(id string) string { return queen.ShareGroupMemberKey(g.key.ID, id) }, func(id string) (any, bool) {
		mb := g.members[id]
		if mb == nil {
			return nil, false
		}
		return memberRowOf(mb), true
	})
	if err := g.write(ctx, ops, false); err != nil {
		g.m.log.Warn("share group state write failed; the group is reloaded from the store at its next request", "group", g.key.ID, "err", err)
		g.Kill()
		g.m.reg.Forget(g.key, g)
		return codeOf(err)
	}
	g.rows.Written()
	if len(g.members) == 0 {
		g.Kill()
		g.m.reg.Forget(g.key, g)
	}
	return 0
}

// write applies ops, led by the compare-and-set of the meta row; a group
// created here, or taken over, first takes the fence (cluster mode).
func (g *group) write(ctx context.Context, ops []queen.KVOp, takeover bool) error {
	meta := groupreg.Put(queen.ShareGroupMetaKey(g.key.ID), g.metaRow())
	return g.m.owner.Write(ctx, g.kv, g.key.ID, meta, &g.rows, takeover, g.epoch, g.m.clock.Now(), ops)
}

// load reads a group's rows (nil when it has none) and takes it over: the
// meta row is rewritten by compare-and-set, and in a cluster the fence
// moves, so that the previous owner's next write fails. Member sessions
// start afresh from now, as Kafka's do when a coordinator loads its groups.
func (m *Manager) load(ctx context.Context, k groupKey, kv KV) (*group, int16) {
	meta, members, err := groupreg.Read(ctx, kv, queen.ShareGroupPrefix(k.ID), queen.ShareGroupMetaKey(k.ID))
	if err != nil {
		m.log.Warn("loading share group failed", "group", k.ID, "err", err)
		return nil, codeOf(err)
	}
	if meta == nil {
		return nil, 0
	}
	g := newGroup(m, k, kv)
	var mr metaRow
	if err := json.Unmarshal(meta.Value, &mr); err != nil {
		m.log.Error("unreadable share group row; the group starts over", "key", meta.Key, "err", err)
	}
	g.epoch, g.assignmentEpoch, g.rows.Ver = mr.Epoch, mr.AssignmentEpoch, meta.Version
	g.topics = map[string]Topic{}
	for _, t := range mr.Topics {
		if id, ok := parseID(t.ID); ok {
			g.topics[t.Name] = Topic{Name: t.Name, ID: id, Partitions: t.Partitions}
		}
	}
	for _, r := range members {
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
	_, g.session = m.settings(ctx, kv, k.ID)
	now := m.clock.Now()
	for _, mb := range g.members {
		mb.session.LastSeen = now
		g.armSession(mb)
	}
	g.rows.MetaDirty = true
	if err := g.write(ctx, nil, true); err != nil {
		m.log.Warn("taking over share group failed", "group", k.ID, "err", err)
		g.Kill()
		return nil, codeOf(err)
	}
	g.rows.MetaDirty = false
	m.log.Info("share group loaded from the store", "group", k.ID, "epoch", g.epoch, "assignment_epoch", g.assignmentEpoch, "members", len(g.members))
	return g, 0
}

// deleteRows deletes every row of g (an empty group given up).
func (g *group) deleteRows(ctx context.Context, kv KV) int16 {
	return codeOf(groupreg.Delete(ctx, kv, queen.ShareGroupPrefix(g.key.ID), queen.ShareGroupMetaKey(g.key.ID)))
}

func sortedNames(topics map[string]Topic) []string {
	out := make([]string, 0, len(topics))
	for n := range topics {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
