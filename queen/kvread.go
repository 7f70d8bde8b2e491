package queen

import (
	"context"
	"encoding/json"
	"fmt"
)

// KVCaller makes §7 KV calls: the Client, or whatever a caller reaches the
// route through (a per-credential view, a test double).
type KVCaller interface {
	KV(ctx context.Context, ops []KVOp) ([]KVResult, error)
}

// ErrUnread is a getMany read the store's budget kept cutting short.
var ErrUnread = &Error{Kind: KindTransient, Route: "POST /api/v1/kv", Message: "keys left unread by the read budget after repeated reads"}

// maxReadStalls is how many rereads in a row may read nothing before
// ReadKeys gives up.
const maxReadStalls = 3

// ReadKeys reads keys (namespace Namespace) with getMany, at most perCall
// keys a call (§7.3 allows 1,024). A key in neither rows nor missing was
// cut by the read budget: it is read again, never taken as absent. The
// result holds the live rows only, so a key not in it is absent.
func ReadKeys(ctx context.Context, kv KVCaller, keys []string, perCall int) (map[string]KVRow, error) {
	out := make(map[string]KVRow, len(keys))
	todo := keys
	for stalls := 0; len(todo) > 0; {
		var unread []string
		for start := 0; start < len(todo); start += perCall {
			chunk := todo[start:min(start+perCall, len(todo))]
			res, err := kv.KV(ctx, []KVOp{{Op: OpGetMany, NS: Namespace, Keys: chunk}})
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
				return nil, ErrUnread
			}
		} else {
			stalls = 0
		}
		todo = unread
	}
	return out, nil
}

// ReadPrefix pages through every row under prefix (namespace Namespace),
// limit rows a call, following nextAfter; a truncated page whose cursor
// does not advance is a protocol error, never an endless loop.
func ReadPrefix(ctx context.Context, kv KVCaller, prefix string, limit int, keysOnly bool) ([]KVRow, error) {
	var rows []KVRow
	after := ""
	for {
		res, err := kv.KV(ctx, []KVOp{{Op: OpGetPrefix, NS: Namespace, Prefix: prefix, Limit: limit, After: after, KeysOnly: keysOnly}})
		if err != nil {
			return nil, fmt.Errorf("kv getPrefix %q: %w", prefix, err)
		}
		r := res[0]
		rows = append(rows, r.Rows...)
		if !r.Truncated {
			return rows, nil
		}
		if r.NextAfter == nil || *r.NextAfter <= after {
			return nil, &Error{Kind: KindProtocol, Route: "POST /api/v1/kv", Message: "getPrefix page truncated without a cursor that advances"}
		}
		after = *r.NextAfter
	}
}

// FenceOp is the put of qk:fence:<group> with v, expecting the version the
// row has now (0 when absent): a group's new owner takes the fence so that
// the previous owner's next fenced write fails.
func FenceOp(ctx context.Context, kv KVCaller, group string, v FenceValue) (KVOp, error) {
	key := FenceKey(group)
	rows, err := ReadKeys(ctx, kv, []string{key}, 1)
	if err != nil {
		return KVOp{}, fmt.Errorf("reading the fence of group %q: %w", group, err)
	}
	var ver int64
	if r, ok := rows[key]; ok {
		ver = r.Version
	}
	b, err := json.Marshal(v)
	if err != nil {
		return KVOp{}, err
	}
	return KVOp{Op: OpPut, NS: Namespace, Key: key, Value: b, Forever: true, Expect: &ver, Required: true}, nil
}
