package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/queen"
)

// memKV is a stand-in for the dev broker's KV route with §7.2's semantics
// for the ops the registry sends, used until package queen/dev lands.
type memKV struct {
	clk  *fakeClock
	mu   sync.Mutex
	seq  int64
	rows map[string]memRow
}

type memRow struct {
	value   json.RawMessage
	version int64
	expires time.Time
}

func newStore(t *testing.T, clk *fakeClock) KV {
	t.Helper()
	return &memKV{clk: clk, rows: map[string]memRow{}}
}

func (m *memKV) KV(ctx context.Context, ops []queen.KVOp) ([]queen.KVResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clk.Now()
	live := func(k string) (memRow, bool) {
		r, ok := m.rows[k]
		if !ok || !r.expires.After(now) {
			return memRow{}, false
		}
		return r, true
	}
	out := make([]queen.KVResult, len(ops))
	order := make([]int, 0, len(ops))
	for i, op := range ops {
		if op.NS != queen.Namespace {
			return nil, fmt.Errorf("ns %q", op.NS)
		}
		if op.Op == queen.OpPut || op.Op == queen.OpDelete {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return ops[order[a]].Key < ops[order[b]].Key })
	for i := range ops {
		if ops[i].Op == queen.OpGetPrefix {
			order = append(order, i)
		}
	}
	for _, i := range order {
		op := ops[i]
		res := queen.KVResult{Index: i, Op: op.Op, Key: op.Key}
		cur, ok := live(op.Key)
		switch op.Op {
		case queen.OpPut, queen.OpDelete:
			reason := ""
			switch {
			case op.Expect == nil && op.Op == queen.OpDelete && !ok:
				reason = queen.ReasonAbsent
			case op.Expect == nil:
			case *op.Expect == 0 && ok:
				reason = queen.ReasonExists
			case *op.Expect > 0 && !ok:
				reason = queen.ReasonAbsent
			case *op.Expect > 0 && cur.version != *op.Expect:
				reason = queen.ReasonVersion
			}
			if reason != "" {
				res.Reason, res.Value, res.Version = reason, cur.value, cur.version
				break
			}
			res.Applied = true
			if op.Op == queen.OpDelete {
				delete(m.rows, op.Key)
				res.Value, res.Version = cur.value, cur.version
				break
			}
			if op.TTLSeconds <= 0 {
				return nil, fmt.Errorf("put without ttlSeconds")
			}
			m.seq++
			m.rows[op.Key] = memRow{value: op.Value, version: m.seq, expires: now.Add(time.Duration(op.TTLSeconds) * time.Second)}
			res.Value, res.Version = op.Value, m.seq
		case queen.OpGetPrefix:
			var keys []string
			for k := range m.rows {
				if _, ok := live(k); ok && strings.HasPrefix(k, op.Prefix) && k > op.After {
					keys = append(keys, k)
				}
			}
			sort.Strings(keys)
			if len(keys) > op.Limit {
				keys = keys[:op.Limit]
				res.Truncated = true
				last := keys[len(keys)-1]
				res.NextAfter = &last
			}
			for _, k := range keys {
				r := m.rows[k]
				res.Rows = append(res.Rows, queen.KVRow{Key: k, Value: r.value, Version: r.version})
			}
		default:
			return nil, fmt.Errorf("op %q", op.Op)
		}
		out[i] = res
	}
	return out, nil
}
