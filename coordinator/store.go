package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/queen-mq/queen-kafka/queen"
)

// Values of the §10 rows this package writes.
type offsetValue struct {
	Offset   int64  `json:"offset"`
	Metadata string `json:"metadata"`
	TS       int64  `json:"ts"`
}

type indexValue struct {
	PT string `json:"pt"`
	TS int64  `json:"ts"`
}

type fenceValue = queen.FenceValue

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("coordinator: encoding %T: %v", v, err)) // plain structs always encode
	}
	return b
}

// OffsetWrite is the put of one committed offset under key, the row
// OffsetCommit writes and OffsetFetch reads; a transaction's commit carries
// it behind its own fence.
func OffsetWrite(key string, offset int64, metadata string, ts int64) queen.KVOp {
	return putOp(key, offsetValue{Offset: offset, Metadata: metadata, TS: ts})
}

// IndexWrite is the put of group's existence index row (qk:groups:),
// protocolType "consumer", or "" for a group no member joined.
func IndexWrite(group, protocolType string, ts int64) queen.KVOp {
	return putOp(queen.GroupIndexKey(group), indexValue{PT: protocolType, TS: ts})
}

func putOp(key string, value any) queen.KVOp {
	return queen.KVOp{Op: queen.OpPut, NS: queen.Namespace, Key: key, Value: mustJSON(value), Forever: true}
}

func deleteOp(key string) queen.KVOp {
	return queen.KVOp{Op: queen.OpDelete, NS: queen.Namespace, Key: key}
}

// writeOps applies writes for g in calls within the contract's limits and
// returns how many of them were applied before an error; writes are never
// reordered, so the first n are exactly the applied ones. The caller holds
// g.wmu. In fenced mode op 0 of every call is the fence, a required put
// expecting the version this node holds, its new version carried into the
// next call; a fence another node moved is errLostFence.
func (c *Coordinator) writeOps(ctx context.Context, kv KV, g *group, generation int32, writes []queen.KVOp) (int, error) {
	per := maxOpsPerCall
	if c.cfg.Fenced {
		per--
		if err := c.holdFence(ctx, kv, g); err != nil {
			return 0, err
		}
	}
	done := 0
	for done < len(writes) {
		chunk := writes[done:min(done+per, len(writes))]
		if err := c.writeChunk(ctx, kv, g, generation, chunk); err != nil {
			return done, err
		}
		done += len(chunk)
	}
	return done, nil
}

func (c *Coordinator) writeChunk(ctx context.Context, kv KV, g *group, generation int32, chunk []queen.KVOp) error {
	if !c.cfg.Fenced {
		_, err := kv.KV(ctx, chunk)
		if err != nil {
			return fmt.Errorf("kv write for group %q: %w", g.key.id, err)
		}
		return nil
	}
	ops := make([]queen.KVOp, 0, len(chunk)+1)
	ops = append(ops, queen.KVOp{})
	ops = append(ops, chunk...)
	// One retry, and only when the fence still carries this very process:
	// then the version we hold is stale because one of our own writes
	// applied without our seeing its answer. A fence naming anyone else is
	// another owner's, and writing over it is the stale-owner overwrite the
	// fence exists to prevent.
	for attempt := 0; ; attempt++ {
		expect := g.fenceVer
		ops[0] = putOp(queen.FenceKey(g.key.id), fenceValue{Node: c.cfg.NodeID, Incarnation: c.cfg.Incarnation, Generation: generation, TS: c.clock.Now().UnixMilli()})
		ops[0].Expect, ops[0].Required = &expect, true
		res, err := kv.KV(ctx, ops)
		if err == nil {
			g.fenceVer, g.claimed = res[0].Version, true
			return nil
		}
		var pe *queen.PreconditionError
		if !errors.As(err, &pe) || pe.Index != 0 {
			return fmt.Errorf("fenced kv write for group %q: %w", g.key.id, err)
		}
		if attempt == 0 && pe.KVReason != queen.ReasonAbsent && c.isOwnFence(pe.Value) {
			g.fenceVer = pe.Version
			continue
		}
		g.fenceHeld = false
		c.log.Warn("group fence lost: another node coordinates the group now", "group", g.key.id, "held_version", expect, "kv_reason", pe.KVReason, "version", pe.Version)
		return errLostFence
	}
}

// holdFence is the takeover read, once per group object: the version the
// next fenced write expects, and the generation the fence last carried,
// which the group's generations continue from. The caller holds g.wmu.
func (c *Coordinator) holdFence(ctx context.Context, kv KV, g *group) error {
	if g.fenceHeld {
		return nil
	}
	v, gen, err := c.readFence(ctx, kv, g.key.id)
	if err != nil {
		return err
	}
	g.fenceVer, g.fenceHeld = v, true
	g.mu.Lock()
	// Generations continue across owners, as Kafka's loaded group
	// metadata makes them: a member of the previous owner's group can
	// never present a generation this group will reach again, and a
	// cooperative assignor weighing two members' claims to a partition by
	// generation prefers the member of the newer owner.
	if g.generation < gen {
		g.generation = gen
	}
	g.mu.Unlock()
	return nil
}

// claimFence writes the fence before a member first joins a group this
// node coordinates in fenced mode (cluster mode). Its members read their
// starting offsets after this write, so a previous owner that has not yet
// seen the live set change can commit nothing after that read: its next
// fenced write meets the moved fence and it answers NOT_COORDINATOR. A
// lazy takeover (the fence moved only at this node's first commit) let
// the old owner's members commit past the offsets the new owner's members
// started from, and the new owner's first commit then took the committed
// offset backwards. The answer is 0, or the code the join is refused with.
func (c *Coordinator) claimFence(ctx context.Context, cl Client, group, memberID string) int16 {
	if !c.cfg.Fenced || !validGroupID(group, false) || c.ownerCode(cl, group) != 0 {
		return 0 // not fenced, or join answers the refusal itself
	}
	g := c.lookup(cl, group)
	if g == nil {
		if memberID != "" {
			return 0 // join answers UNKNOWN_MEMBER_ID
		}
		var err error
		if g, err = c.getOrCreate(cl, group); err != nil {
			return 0 // join answers the ceiling
		}
	}
	g.wmu.Lock()
	defer g.wmu.Unlock()
	if g.claimed {
		return 0
	}
	if code := g.writable(); code != 0 {
		return code
	}
	kv := c.kvFor(cl)
	err := c.holdFence(ctx, kv, g)
	if err == nil {
		g.mu.Lock()
		gen := g.generation
		g.mu.Unlock()
		err = c.writeChunk(ctx, kv, g, gen, nil)
	}
	if err != nil {
		c.log.Warn("join refused: taking the group's fence failed", "group", group, "err", err)
		return c.writeCode(g, err)
	}
	return 0
}

func (c *Coordinator) isOwnFence(raw []byte) bool {
	var f fenceValue
	if json.Unmarshal(raw, &f) != nil {
		return false
	}
	return f.Node == c.cfg.NodeID && f.Incarnation == c.cfg.Incarnation
}

// readFence is the takeover read: the fence's current version and the
// generation it carries, 0 and 0 when absent.
func (c *Coordinator) readFence(ctx context.Context, kv KV, group string) (int64, int32, error) {
	rows, err := c.readKeys(ctx, kv, []string{queen.FenceKey(group)})
	if err != nil {
		return 0, 0, fmt.Errorf("reading the fence of group %q: %w", group, err)
	}
	r, ok := rows[queen.FenceKey(group)]
	if !ok {
		return 0, 0, nil
	}
	var f fenceValue
	if err := json.Unmarshal(r.Value, &f); err != nil {
		// Only the facade writes the fence; an unreadable one still fences
		// by its version, and its generation is taken as none.
		c.log.Error("unreadable group fence row", "key", r.Key, "err", err)
	}
	return r.Version, f.Generation, nil
}

// errUnread is a read the store's budget kept cutting short.
var errUnread = queen.ErrUnread

// readKeys reads keys with getMany, readKeysPerCall a call (queen.ReadKeys).
func (c *Coordinator) readKeys(ctx context.Context, kv KV, keys []string) (map[string]queen.KVRow, error) {
	return queen.ReadKeys(ctx, kv, keys, readKeysPerCall)
}

// readPrefix pages through every row under prefix (queen.ReadPrefix).
func (c *Coordinator) readPrefix(ctx context.Context, kv KV, prefix string, limit int, keysOnly bool) ([]queen.KVRow, error) {
	return queen.ReadPrefix(ctx, kv, prefix, limit, keysOnly)
}
