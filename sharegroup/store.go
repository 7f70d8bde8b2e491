package sharegroup

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/queen-mq/queen-kafka/faults"
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

func put(key string, v any) queen.KVOp {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("sharegroup: encoding %T: %v", v, err)) // plain structs always encode
	}
	return queen.KVOp{Op: queen.OpPut, NS: queen.Namespace, Key: key, Value: b, Forever: true}
}

// errLost is a compare-and-set that failed: another node wrote the group.
var errLost = errors.New("share group taken over by another node")

// codeOf is the Kafka code a failed store call answers: a lost
// compare-and-set is NOT_COORDINATOR, the rest as faults.GroupCode maps it.
func codeOf(err error) int16 {
	if errors.Is(err, errLost) {
		return kerr.NotCoordinator.Code
	}
	return faults.GroupCode(err)
}

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
			ops = append(ops, put(queen.ShareGroupMemberKey(g.key.id, id), memberRowOf(mb)))
		}
	}
	for id := range g.gone {
		ops = append(ops, queen.KVOp{Op: queen.OpDelete, NS: queen.Namespace, Key: queen.ShareGroupMemberKey(g.key.id, id)})
	}
	if err := g.write(ctx, ops); err != nil {
		g.m.log.Warn("share group state write failed; the group is reloaded from the store at its next request", "group", g.key.id, "err", err)
		g.kill()
		g.m.forget(g)
		return codeOf(err)
	}
	clear(g.dirty)
	clear(g.gone)
	g.metaDirty = false
	if len(g.members) == 0 {
		g.kill()
		g.m.forget(g)
	}
	return 0
}

// write applies ops in calls within the contract's limits, each led by the
// meta row's compare-and-set; a group created here first takes the fence
// (cluster mode).
func (g *group) write(ctx context.Context, ops []queen.KVOp) error {
	per := maxOpsPerCall - 2
	done := 0
	for first := true; first || done < len(ops); first = false {
		chunk := ops[done:min(done+per, len(ops))]
		var lead []queen.KVOp
		fenceAt := -1
		if g.metaVer < 0 {
			g.metaVer = 0 // the rows must be absent
			if g.m.cfg.Fenced {
				op, err := g.fenceOp(ctx)
				if err != nil {
					return err
				}
				fenceAt = 0
				lead = append(lead, op)
			}
		}
		meta := put(queen.ShareGroupMetaKey(g.key.id), g.metaRow())
		expect := g.metaVer
		meta.Expect, meta.Required = &expect, true
		metaAt := len(lead)
		lead = append(lead, meta)
		res, err := g.kv.KV(ctx, append(lead, chunk...))
		if err != nil {
			var pe *queen.PreconditionError
			if errors.As(err, &pe) && (pe.Index == metaAt || pe.Index == fenceAt) {
				return fmt.Errorf("%w (op %d, %s, version %d)", errLost, pe.Index, pe.KVReason, pe.Version)
			}
			return fmt.Errorf("kv write of share group %q: %w", g.key.id, err)
		}
		g.metaVer = res[metaAt].Version
		done += len(chunk)
	}
	return nil
}

func (g *group) fenceOp(ctx context.Context) (queen.KVOp, error) {
	return queen.FenceOp(ctx, g.kv, g.key.id, queen.FenceValue{Node: g.m.cfg.NodeID, Incarnation: g.m.cfg.Incarnation, Generation: g.epoch, TS: g.m.clock.Now().UnixMilli()})
}

// load reads a group's rows (nil when it has none) and takes it over: the
// meta row is rewritten by compare-and-set, and in a cluster the fence
// moves, so that the previous owner's next write fails. Member sessions
// start afresh from now, as Kafka's do when a coordinator loads its groups.
func (m *Manager) load(ctx context.Context, k groupKey, kv KV) (*group, int16) {
	rows, err := queen.ReadPrefix(ctx, kv, queen.ShareGroupPrefix(k.id), 1000, false)
	if err != nil {
		m.log.Warn("loading share group failed", "group", k.id, "err", err)
		return nil, codeOf(err)
	}
	metaKey := queen.ShareGroupMetaKey(k.id)
	memberPrefix := queen.ShareGroupPrefix(k.id) + "m:"
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
	_, g.session = m.settings(ctx, kv, k.id)
	now := m.clock.Now()
	for _, mb := range g.members {
		mb.lastSeen = now
		g.armSession(mb)
	}
	g.metaDirty = true
	var ops []queen.KVOp
	if m.cfg.Fenced {
		op, err := g.fenceOp(ctx)
		if err != nil {
			g.kill()
			return nil, codeOf(err)
		}
		ops = append(ops, op)
	}
	if err := g.write(ctx, ops); err != nil {
		m.log.Warn("taking over share group failed", "group", k.id, "err", err)
		g.kill()
		return nil, codeOf(err)
	}
	g.metaDirty = false
	m.log.Info("share group loaded from the store", "group", k.id, "epoch", g.epoch, "assignment_epoch", g.assignmentEpoch, "members", len(g.members))
	return g, 0
}

// deleteRows deletes every row of g, the meta row last, so that a delete
// cut short leaves a group that still loads (and can be deleted again).
func (g *group) deleteRows(ctx context.Context, kv KV) int16 {
	rows, err := queen.ReadPrefix(ctx, kv, queen.ShareGroupPrefix(g.key.id), 1000, true)
	if err != nil {
		return codeOf(err)
	}
	meta := queen.ShareGroupMetaKey(g.key.id)
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
