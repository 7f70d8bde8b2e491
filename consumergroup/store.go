package consumergroup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/queen-mq/queen-kafka/faults"
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

func put(key string, v any) queen.KVOp {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("consumergroup: encoding %T: %v", v, err)) // plain structs always encode
	}
	return queen.KVOp{Op: queen.OpPut, NS: queen.Namespace, Key: key, Value: b, Forever: true}
}

// errLost is a compare-and-set that failed: another node wrote the group.
var errLost = errors.New("consumer group taken over by another node")

// codeOf is the Kafka code a failed store call answers: a lost
// compare-and-set is NOT_COORDINATOR, the rest as faults.GroupCode maps it
// for the classic coordinator too.
func codeOf(err error) int16 {
	if errors.Is(err, errLost) {
		return kerr.NotCoordinator.Code
	}
	return faults.GroupCode(err)
}

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
	if !g.metaDirty && len(g.dirty) == 0 && len(g.gone) == 0 {
		return 0
	}
	var ops []queen.KVOp
	for id := range g.dirty {
		if m := g.members[id]; m != nil {
			ops = append(ops, put(queen.ConsumerGroupMemberKey(g.key.id, id), g.memberRow(m)))
		}
	}
	for id := range g.gone {
		ops = append(ops, queen.KVOp{Op: queen.OpDelete, NS: queen.Namespace, Key: queen.ConsumerGroupMemberKey(g.key.id, id)})
	}
	if err := g.write(ctx, ops); err != nil {
		code := codeOf(err)
		g.m.log.Warn("consumer group state write failed; the group is reloaded from the store at its next request", "group", g.key.id, "err", err)
		g.kill()
		g.m.forget(g)
		return code
	}
	clear(g.dirty)
	clear(g.gone)
	g.metaDirty = false
	g.publish()
	if len(g.members) == 0 {
		// An empty group holds nothing its rows do not: it leaves memory
		// (so memory holds only groups with members) and is loaded again
		// from the store when it is next named.
		g.kill()
		g.m.forget(g)
	}
	return 0
}

// write applies ops in calls within the contract's limits, each led by the
// meta row's compare-and-set; a group no node has written yet first takes
// the fence (cluster mode).
func (g *group) write(ctx context.Context, ops []queen.KVOp) error {
	per := maxOpsPerCall - 2
	done := 0
	for first := true; first || done < len(ops); first = false {
		chunk := ops[done:min(done+per, len(ops))]
		var lead []queen.KVOp
		fenceAt := -1
		if g.metaVer < 0 {
			// A group created here: its rows must be absent, and in a
			// cluster the fence moves before any member reads an offset.
			g.metaVer = 0
			if g.m.cfg.Fenced {
				op, err := g.fenceOp(ctx)
				if err != nil {
					return err
				}
				fenceAt = 0
				lead = append(lead, op)
			}
		}
		meta := put(queen.ConsumerGroupMetaKey(g.key.id), g.metaRow())
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
			return fmt.Errorf("kv write of consumer group %q: %w", g.key.id, err)
		}
		g.metaVer = res[metaAt].Version
		done += len(chunk)
	}
	return nil
}

// fenceOp is the put of qk:fence:<group> expecting the version it has now.
func (g *group) fenceOp(ctx context.Context) (queen.KVOp, error) {
	return queen.FenceOp(ctx, g.kv, g.key.id, queen.FenceValue{Node: g.m.cfg.NodeID, Incarnation: g.m.cfg.Incarnation, Generation: g.epoch, TS: g.m.clock.Now().UnixMilli()})
}

// deleteRows deletes every row of g (an empty group given up).
func (g *group) deleteRows(ctx context.Context, kv KV) int16 {
	rows, err := readPrefix(ctx, kv, queen.ConsumerGroupPrefix(g.key.id))
	if err != nil {
		return codeOf(err)
	}
	var ops []queen.KVOp
	for _, r := range rows {
		if r.Key != queen.ConsumerGroupMetaKey(g.key.id) {
			ops = append(ops, queen.KVOp{Op: queen.OpDelete, NS: queen.Namespace, Key: r.Key})
		}
	}
	// The meta row goes last, so that a delete cut short leaves a group
	// that still loads (and can be deleted again).
	ops = append(ops, queen.KVOp{Op: queen.OpDelete, NS: queen.Namespace, Key: queen.ConsumerGroupMetaKey(g.key.id)})
	for len(ops) > 0 {
		n := min(len(ops), maxOpsPerCall)
		if _, err := kv.KV(ctx, ops[:n]); err != nil {
			return codeOf(err)
		}
		ops = ops[n:]
	}
	return 0
}

func readPrefix(ctx context.Context, kv KV, prefix string) ([]queen.KVRow, error) {
	return queen.ReadPrefix(ctx, kv, prefix, 1000, false)
}

// load reads a group's rows (nil when it has none) and takes it over: the
// meta row is rewritten by compare-and-set, and in a cluster the fence
// moves, so that the previous owner's next state write or offset commit
// fails. Member sessions start afresh from now, as Kafka's do when a
// coordinator loads its groups.
func (m *Manager) load(ctx context.Context, cl Client, id string) (*group, int16) {
	kv := m.kvFor(cl)
	rows, err := readPrefix(ctx, kv, queen.ConsumerGroupPrefix(id))
	if err != nil {
		m.log.Warn("loading consumer group failed", "group", id, "err", err)
		return nil, codeOf(err)
	}
	metaKey := queen.ConsumerGroupMetaKey(id)
	memberPrefix := queen.ConsumerGroupPrefix(id) + "m:"
	g := newGroup(m, groupKey{cl.Identity, id}, kv)
	found := false
	for _, r := range rows {
		switch {
		case r.Key == metaKey:
			var mr metaRow
			if err := json.Unmarshal(r.Value, &mr); err != nil {
				m.log.Error("unreadable consumer group row; the group starts over", "key", r.Key, "err", err)
			}
			g.epoch, g.assignmentEpoch, g.topicsHash, g.metaVer = mr.Epoch, mr.AssignmentEpoch, mr.TopicsHash, r.Version
			found = true
		case strings.HasPrefix(r.Key, memberPrefix):
			var mr memberRow
			if err := json.Unmarshal(r.Value, &mr); err != nil || mr.ID == "" {
				m.log.Error("unreadable consumer group member row, skipped", "key", r.Key, "err", err)
				continue
			}
			g.loadMember(mr)
		}
	}
	if !found {
		return nil, 0
	}
	if !g.targetsDisjoint() {
		// A write cut between calls (a group of more members than one
		// call carries) left targets of two epochs: compute a new one.
		g.epoch++
		m.log.Warn("consumer group loaded with overlapping target assignments; bumping its epoch", "group", id, "epoch", g.epoch)
	}
	now := m.clock.Now()
	for _, mb := range g.members {
		mb.lastSeen = now
		g.armSession(mb)
		if mb.state == stateUnrevoked {
			g.armRebalance(mb)
		}
	}
	g.metaDirty = true
	var ops []queen.KVOp
	if m.cfg.Fenced {
		op, err := g.fenceOp(ctx)
		if err != nil {
			return nil, codeOf(err)
		}
		ops = append(ops, op)
	}
	if err := g.write(ctx, ops); err != nil {
		m.log.Warn("taking over consumer group failed", "group", id, "err", err)
		g.kill()
		return nil, codeOf(err)
	}
	g.metaDirty = false
	g.publish()
	m.log.Info("consumer group loaded from the store", "group", id, "epoch", g.epoch, "assignment_epoch", g.assignmentEpoch, "members", len(g.members))
	return g, 0
}

func (g *group) loadMember(r memberRow) {
	assigned, ok1 := decodeParts(r.Assigned)
	revoking, ok2 := decodeParts(r.Revoking)
	target, ok3 := decodeParts(r.Target)
	if !ok1 || !ok2 || !ok3 {
		g.m.log.Error("unreadable partitions in consumer group member row, skipped", "group", g.key.id, "member", r.ID)
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
