package memkv

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/queen-mq/queen-kafka/queen"
)

// KV is an in-memory Queen KV (queen-api.md §7.2) for unit tests: atomic
// calls, versions from one sequence, expect/required, getMany/getPrefix
// with a read budget, and the contract's per-call ceilings. Hooks let a
// test fail calls, slow them, park one midway or race a write in.
type KV struct {
	mu      sync.Mutex
	seq     int64
	rows    map[string]row
	budget  int // value bytes per call before rows are cut; 0 = unlimited
	maxOps  int
	maxKeys int

	calls, writes int
	fail          error // every call fails with it (failOnce: only the next)
	failOnce      bool
	delay         time.Duration // each call waits this long first
	gate, entered chan struct{} // a call signals entered, then waits for gate
	beforePut     func()        // runs once, before the next call that opens with a put
}

type row struct {
	value   json.RawMessage
	version int64
}

// New is an empty KV.
func New() *KV { return &KV{rows: map[string]row{}, maxOps: 256, maxKeys: 1024} }

// KV runs one call.
func (m *KV) KV(ctx context.Context, ops []queen.KVOp) ([]queen.KVResult, error) {
	m.mu.Lock()
	d, gate, entered := m.delay, m.gate, m.entered
	var before func()
	if m.beforePut != nil && len(ops) > 0 && ops[0].Op == queen.OpPut {
		before, m.beforePut = m.beforePut, nil
	}
	m.mu.Unlock()
	time.Sleep(d)
	if gate != nil {
		entered <- struct{}{}
		<-gate
	}
	if before != nil {
		before()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	if err := m.fail; err != nil {
		if m.failOnce {
			m.fail = nil
		}
		return nil, err
	}
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
	snapshot := make(map[string]row, len(m.rows))
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
	m.writes += len(order)
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
			m.rows[op.Key] = row{value: append(json.RawMessage(nil), op.Value...), version: m.seq}
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

// SetBudget sets the value bytes a call reads before its rows are cut
// (0: unlimited).
func (m *KV) SetBudget(n int) {
	m.mu.Lock()
	m.budget = n
	m.mu.Unlock()
}

// Fail makes every call fail with err before it applies (nil: none).
func (m *KV) Fail(err error) {
	m.mu.Lock()
	m.fail, m.failOnce = err, false
	m.mu.Unlock()
}

// FailNext makes the next call fail with err before it applies.
func (m *KV) FailNext(err error) {
	m.mu.Lock()
	m.fail, m.failOnce = err, true
	m.mu.Unlock()
}

// SetDelay makes each call wait d first, so that concurrent callers
// interleave.
func (m *KV) SetDelay(d time.Duration) {
	m.mu.Lock()
	m.delay = d
	m.mu.Unlock()
}

// Gate parks every call, after it sends on entered, until gate closes
// (nil gate: none).
func (m *KV) Gate(gate, entered chan struct{}) {
	m.mu.Lock()
	m.gate, m.entered = gate, entered
	m.mu.Unlock()
}

// BeforeNextPut runs f once, before the next call that opens with a put
// applies: another node's write racing it.
func (m *KV) BeforeNextPut(f func()) {
	m.mu.Lock()
	m.beforePut = f
	m.mu.Unlock()
}

// Keys is the live keys under prefix, in order.
func (m *KV) Keys(prefix string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for k := range m.rows {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// Row is key's value and version, if live.
func (m *KV) Row(key string) (value []byte, version int64, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.rows[key]
	return r.value, r.version, ok
}

// Counts is how many calls were made and how many put or delete ops they
// carried (applied or not).
func (m *KV) Counts() (calls, writes int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls, m.writes
}
