package consumergroup

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/queen-mq/queen-kafka/ownership"
	"github.com/queen-mq/queen-kafka/queen"
)

// memKV is an in-memory KV with the contract's put/delete preconditions
// (expect 0 = absent, required fails the whole call), getMany and
// getPrefix. fail, when set, fails every call.
type memKV struct {
	mu    sync.Mutex
	seq   int64
	rows  map[string]memRow
	fail  error
	calls int
	delay time.Duration // each call waits this long first, so that concurrent callers interleave
	gate  chan struct{} // when set, a call waits for it, after signalling inKV
	inKV  chan struct{}
}

type memRow struct {
	value   json.RawMessage
	version int64
}

func newMemKV() *memKV { return &memKV{rows: map[string]memRow{}} }

func (m *memKV) KV(_ context.Context, ops []queen.KVOp) ([]queen.KVResult, error) {
	m.mu.Lock()
	d, gate, inKV := m.delay, m.gate, m.inKV
	m.mu.Unlock()
	time.Sleep(d)
	if gate != nil {
		inKV <- struct{}{}
		<-gate
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	if m.fail != nil {
		return nil, m.fail
	}
	snapshot := make(map[string]memRow, len(m.rows))
	for k, v := range m.rows {
		snapshot[k] = v
	}
	seq := m.seq
	res := make([]queen.KVResult, len(ops))
	for i, op := range ops {
		r := queen.KVResult{Index: i, Op: op.Op, Key: op.Key}
		switch op.Op {
		case queen.OpPut, queen.OpDelete:
			cur, live := m.rows[op.Key]
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
			if reason != "" {
				if op.Required {
					m.rows, m.seq = snapshot, seq
					return nil, &queen.PreconditionError{Index: i, KVReason: reason, Version: cur.version, Value: cur.value}
				}
				r.Reason = reason
				break
			}
			r.Applied = true
			if op.Op == queen.OpPut {
				m.seq++
				m.rows[op.Key] = memRow{value: op.Value, version: m.seq}
				r.Version = m.seq
			} else {
				delete(m.rows, op.Key)
			}
		case queen.OpGetMany:
			for _, k := range op.Keys {
				if row, ok := m.rows[k]; ok {
					r.Rows = append(r.Rows, queen.KVRow{Key: k, Value: row.value, Version: row.version})
				} else {
					r.Missing = append(r.Missing, k)
				}
			}
		case queen.OpGetPrefix:
			var ks []string
			for k := range m.rows {
				if strings.HasPrefix(k, op.Prefix) && k > op.After {
					ks = append(ks, k)
				}
			}
			sort.Strings(ks)
			for _, k := range ks {
				kr := queen.KVRow{Key: k, Version: m.rows[k].version}
				if !op.KeysOnly {
					kr.Value = m.rows[k].value
				}
				r.Rows = append(r.Rows, kr)
			}
		}
		res[i] = r
	}
	return res, nil
}

func (m *memKV) keys(prefix string) []string {
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

// fakeTopics is a catalogue the test edits.
type fakeTopics struct {
	mu     sync.Mutex
	topics []Topic
	err    error
	gate   chan struct{} // when set, All waits for it (a slow catalogue)
	inAll  chan struct{} // when set, All signals it before waiting on gate
}

func (f *fakeTopics) All(context.Context) ([]Topic, error) {
	f.mu.Lock()
	gate, inAll := f.gate, f.inAll
	f.mu.Unlock()
	if gate != nil {
		if inAll != nil {
			inAll <- struct{}{}
		}
		<-gate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	return append([]Topic(nil), f.topics...), nil
}

func (f *fakeTopics) add(name string, parts int32) topicID {
	f.mu.Lock()
	defer f.mu.Unlock()
	var id topicID
	copy(id[:], name)
	id[15] = byte(len(f.topics) + 1)
	f.topics = append(f.topics, Topic{Name: name, ID: id, Partitions: parts})
	return id
}

// owners is an ownership.Owners the test points at a node.
type owners struct {
	mu    sync.Mutex
	self  int32
	owner int32
}

func (o *owners) Owner(string) (ownership.Broker, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return ownership.Broker{NodeID: o.owner}, nil
}
func (o *owners) Redirect(string) (ownership.Broker, bool) { return ownership.Broker{}, false }
func (o *owners) Self() ownership.Broker                   { return ownership.Broker{NodeID: o.self} }
