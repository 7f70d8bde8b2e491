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

type fenceValue struct {
	Node        int32  `json:"node"`
	Incarnation string `json:"incarnation"`
	Generation  int32  `json:"generation"`
	TS          int64  `json:"ts"`
}

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
		if !g.fenceHeld {
			v, err := c.readFence(ctx, kv, g.key.id)
			if err != nil {
				return 0, err
			}
			g.fenceVer, g.fenceHeld = v, true
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
			g.fenceVer = res[0].Version
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

func (c *Coordinator) isOwnFence(raw []byte) bool {
	var f fenceValue
	if json.Unmarshal(raw, &f) != nil {
		return false
	}
	return f.Node == c.cfg.NodeID && f.Incarnation == c.cfg.Incarnation
}

// readFence is the takeover read: the fence's current version, 0 when
// absent.
func (c *Coordinator) readFence(ctx context.Context, kv KV, group string) (int64, error) {
	rows, err := c.readKeys(ctx, kv, []string{queen.FenceKey(group)})
	if err != nil {
		return 0, fmt.Errorf("reading the fence of group %q: %w", group, err)
	}
	if r, ok := rows[queen.FenceKey(group)]; ok {
		return r.Version, nil
	}
	return 0, nil
}

// errUnread is a read the store's budget kept cutting short.
var errUnread = &queen.Error{Kind: queen.KindTransient, Route: "POST /api/v1/kv", Message: "keys left unread by the read budget after repeated reads"}

// readKeys reads keys with getMany, at most readKeysPerCall per call. A key
// in neither rows nor missing was cut by the read budget: it is read again,
// never taken as absent. The result holds the live rows only.
func (c *Coordinator) readKeys(ctx context.Context, kv KV, keys []string) (map[string]queen.KVRow, error) {
	out := make(map[string]queen.KVRow, len(keys))
	todo := keys
	for stalls := 0; len(todo) > 0; {
		var unread []string
		for start := 0; start < len(todo); start += readKeysPerCall {
			chunk := todo[start:min(start+readKeysPerCall, len(todo))]
			res, err := kv.KV(ctx, []queen.KVOp{{Op: queen.OpGetMany, NS: queen.Namespace, Keys: chunk}})
			if err != nil {
				return nil, fmt.Errorf("kv getMany: %w", err)
			}
			seen := make(map[string]bool, len(chunk))
			for _, r := range res[0].Rows {
				out[r.Key] = r
				seen[r.Key] = true
			}
			for _, k := range res[0].Missing {
				seen[k] = true
			}
			for _, k := range chunk {
				if !seen[k] {
					unread = append(unread, k)
				}
			}
		}
		// Rereading is bounded by progress, not by rounds: a budget that
		// lets a few rows through per call is slow, one that lets none
		// through is a failure the client retries.
		if len(unread) == len(todo) {
			if stalls++; stalls == maxReadStalls {
				return nil, errUnread
			}
		} else {
			stalls = 0
		}
		todo = unread
	}
	return out, nil
}

// readPrefix pages through every row under prefix, following nextAfter.
func (c *Coordinator) readPrefix(ctx context.Context, kv KV, prefix string, limit int, keysOnly bool) ([]queen.KVRow, error) {
	var rows []queen.KVRow
	after := ""
	for {
		res, err := kv.KV(ctx, []queen.KVOp{{Op: queen.OpGetPrefix, NS: queen.Namespace, Prefix: prefix, Limit: limit, After: after, KeysOnly: keysOnly}})
		if err != nil {
			return nil, fmt.Errorf("kv getPrefix %q: %w", prefix, err)
		}
		r := res[0]
		rows = append(rows, r.Rows...)
		if !r.Truncated {
			return rows, nil
		}
		if r.NextAfter == nil || *r.NextAfter <= after {
			return nil, &queen.Error{Kind: queen.KindProtocol, Route: "POST /api/v1/kv", Message: "getPrefix page truncated without a cursor that advances"}
		}
		after = *r.NextAfter
	}
}
