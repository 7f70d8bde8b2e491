package coordinator

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"sync"

	"github.com/queen-mq/queen-kafka/queen"
)

// memKV is the test's in-memory KV with §7.2's semantics: atomic calls,
// versions from one sequence, expect/required, getMany/getPrefix with a
// read budget. fail, when set, decides a call's error before it applies.
type memKV struct {
	mu      sync.Mutex
	seq     int64
	rows    map[string]memRow
	budget  int // value bytes per call before rows are cut; 0 = unlimited
	maxOps  int
	maxKeys int
}

type memRow struct {
	value   json.RawMessage
	version int64
}

func newMemKV() *memKV { return &memKV{rows: map[string]memRow{}, maxOps: 256, maxKeys: 1024} }

func (m *memKV) KV(ctx context.Context, ops []queen.KVOp) ([]queen.KVResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	bad := func(msg string) error {
		return &queen.Error{Kind: queen.KindBadRequest, Status: 400, Route: "POST /api/v1/kv", Message: msg}
	}
	if len(ops) > m.maxOps {
		return nil, bad("kv_too_many_ops")
	}
	keys := 0
	written := map[string]bool{}
	for _, op := range ops {
		if op.NS != queen.Namespace {
			return nil, bad("kv_bad_namespace")
		}
		switch op.Op {
		case queen.OpPut, queen.OpDelete:
			keys++
			if op.Key == "" || len(op.Key) > queen.MaxKeyBytes {
				return nil, bad("kv_bad_key")
			}
			if written[op.Key] {
				return nil, bad("kv_duplicate_key_in_call")
			}
			written[op.Key] = true
			if op.Op == queen.OpPut && !op.Forever && op.TTLSeconds == 0 {
				return nil, bad("kv_expiry_not_specified")
			}
		case queen.OpGetMany:
			keys += len(op.Keys)
			for _, k := range op.Keys {
				if k == "" || len(k) > queen.MaxKeyBytes {
					return nil, bad("kv_bad_key")
				}
			}
		case queen.OpGetPrefix:
			if op.Prefix == "" || len(op.Prefix) > queen.MaxKeyBytes {
				return nil, bad("kv_prefix_required")
			}
			keys += clampLimit(op.Limit)
		default:
			return nil, bad("kv_unknown_op")
		}
	}
	if keys > m.maxKeys {
		return nil, bad("kv_too_many_keys")
	}
	// Writes first (a snapshot to roll back), then reads.
	snapshot := make(map[string]memRow, len(m.rows))
	for k, v := range m.rows {
		snapshot[k] = v
	}
	seq := m.seq
	res := make([]queen.KVResult, len(ops))
	order := make([]int, 0, len(ops))
	for i, op := range ops {
		if op.Op == queen.OpPut || op.Op == queen.OpDelete {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return ops[order[a]].Key < ops[order[b]].Key })
	for _, i := range order {
		op := ops[i]
		cur, live := m.rows[op.Key]
		r := queen.KVResult{Index: i, Op: op.Op, Key: op.Key}
		reason := ""
		if op.Expect != nil {
			switch {
			case *op.Expect == 0 && live:
				reason = queen.ReasonExists
			case *op.Expect > 0 && !live:
				reason = queen.ReasonAbsent
			case *op.Expect > 0 && cur.version != *op.Expect:
				reason = queen.ReasonVersion
			}
		}
		if reason == "" && op.Op == queen.OpDelete && op.Expect == nil && !live {
			reason = queen.ReasonAbsent
		}
		if reason != "" {
			if op.Required {
				m.rows, m.seq = snapshot, seq
				return nil, &queen.PreconditionError{Index: i, KVReason: reason, Version: cur.version, Value: cur.value}
			}
			r.Reason, r.Value, r.Version = reason, cur.value, cur.version
			res[i] = r
			continue
		}
		r.Applied = true
		if op.Op == queen.OpPut {
			m.seq++
			m.rows[op.Key] = memRow{value: op.Value, version: m.seq}
			r.Value, r.Version = op.Value, m.seq
		} else {
			delete(m.rows, op.Key)
			r.Value, r.Version = cur.value, cur.version
		}
		res[i] = r
	}
	spent := 0
	over := func(v json.RawMessage) bool {
		if m.budget == 0 {
			return false
		}
		if spent >= m.budget {
			return true
		}
		spent += len(v)
		return false
	}
	for i, op := range ops {
		switch op.Op {
		case queen.OpGetMany:
			r := queen.KVResult{Index: i, Op: op.Op}
			ks := append([]string(nil), op.Keys...)
			sort.Strings(ks)
			for _, k := range ks {
				row, ok := m.rows[k]
				if !ok {
					continue
				}
				if over(row.value) {
					r.Truncated = true
					continue
				}
				r.Rows = append(r.Rows, queen.KVRow{Key: k, Value: row.value, Version: row.version})
			}
			for _, k := range op.Keys {
				if _, ok := m.rows[k]; !ok {
					r.Missing = append(r.Missing, k)
				}
			}
			res[i] = r
		case queen.OpGetPrefix:
			r := queen.KVResult{Index: i, Op: op.Op}
			var ks []string
			for k := range m.rows {
				if strings.HasPrefix(k, op.Prefix) && k > op.After {
					ks = append(ks, k)
				}
			}
			sort.Strings(ks)
			limit := clampLimit(op.Limit)
			for n, k := range ks {
				if n == limit {
					r.Truncated = true
					break
				}
				row := m.rows[k]
				if !op.KeysOnly && over(row.value) {
					r.Truncated = true
					break
				}
				kr := queen.KVRow{Key: k, Version: row.version}
				if !op.KeysOnly {
					kr.Value = row.value
				}
				r.Rows = append(r.Rows, kr)
			}
			if r.Truncated && len(r.Rows) > 0 {
				last := r.Rows[len(r.Rows)-1].Key
				r.NextAfter = &last
			}
			res[i] = r
		}
	}
	return res, nil
}

func clampLimit(l int) int {
	if l == 0 {
		return 100
	}
	return min(max(l, 1), 1000)
}

func (m *memKV) setBudget(b int) {
	m.mu.Lock()
	m.budget = b
	m.mu.Unlock()
}
