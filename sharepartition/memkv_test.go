package sharepartition

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"

	"github.com/queen-mq/queen-kafka/queen"
)

// memKV is §7's store for one namespace, as much as this package uses:
// put with expect, delete, getMany, getPrefix, each call atomic.
type memKV struct {
	mu      sync.Mutex
	rows    map[string]memRow
	seq     int64
	calls   int
	writes  int
	fail    error  // the next call fails with it (then clears)
	onWrite func() // runs before a put applies (a racing node's write)
}

type memRow struct {
	value   []byte
	version int64
}

func newMemKV() *memKV { return &memKV{rows: map[string]memRow{}} }

func (m *memKV) KV(ctx context.Context, ops []queen.KVOp) ([]queen.KVResult, error) {
	if hook := m.takeHook(ops); hook != nil {
		hook()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	if err := m.fail; err != nil {
		m.fail = nil
		return nil, err
	}
	out := make([]queen.KVResult, len(ops))
	for i, op := range ops {
		r := queen.KVResult{Index: i, Op: op.Op, Key: op.Key}
		cur, live := m.rows[op.Key]
		switch op.Op {
		case queen.OpPut, queen.OpDelete:
			m.writes++
			if op.Expect != nil && *op.Expect != cur.version {
				r.Reason = queen.ReasonVersion
				if cur.version == 0 {
					r.Reason = queen.ReasonAbsent
				}
				if *op.Expect == 0 {
					r.Reason = queen.ReasonExists
				}
				r.Value, r.Version = cur.value, cur.version
				break
			}
			if op.Op == queen.OpDelete {
				if !live {
					r.Reason = queen.ReasonAbsent
					break
				}
				delete(m.rows, op.Key)
				r.Applied = true
				break
			}
			m.seq++
			m.rows[op.Key] = memRow{value: append([]byte(nil), op.Value...), version: m.seq}
			r.Applied, r.Version = true, m.seq
		case queen.OpGetMany:
			for _, k := range op.Keys {
				if row, ok := m.rows[k]; ok {
					r.Rows = append(r.Rows, queen.KVRow{Key: k, Value: row.value, Version: row.version})
				} else {
					r.Missing = append(r.Missing, k)
				}
			}
		case queen.OpGetPrefix:
			var keys []string
			for k := range m.rows {
				if strings.HasPrefix(k, op.Prefix) && k > op.After {
					keys = append(keys, k)
				}
			}
			sort.Strings(keys)
			if len(keys) > op.Limit {
				keys = keys[:op.Limit]
				r.Truncated = true
				next := keys[len(keys)-1]
				r.NextAfter = &next
			}
			for _, k := range keys {
				r.Rows = append(r.Rows, queen.KVRow{Key: k, Value: m.rows[k].value, Version: m.rows[k].version})
			}
		default:
			return nil, errors.New("memKV: op " + op.Op)
		}
		out[i] = r
	}
	return out, nil
}

func (m *memKV) takeHook(ops []queen.KVOp) func() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.onWrite == nil || len(ops) == 0 || ops[0].Op != queen.OpPut {
		return nil
	}
	h := m.onWrite
	m.onWrite = nil
	return h
}

func (m *memKV) row(key string) (memRow, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.rows[key]
	return r, ok
}

func (m *memKV) counts() (calls, writes int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls, m.writes
}
