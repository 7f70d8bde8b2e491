package txn

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/queen-mq/queen-kafka/coordinator"
	"github.com/queen-mq/queen-kafka/queen"
)

// pendingIndex is single mode's answer to coordinator.Unstable: the
// partitions of each group (as an identity reaches it) with an offset
// staged by a transaction this process holds open, counted per
// transaction. A stage enters it at TxnOffsetCommit and leaves it when the
// transaction is decided, expires or is dropped (Manager.release), after a
// commit's offsets are in the store: so a fetch never sees neither.
type pendingIndex struct {
	mu     sync.Mutex
	groups map[pendingGroup]map[coordinator.TopicPartition]int
}

type pendingGroup struct{ identity, group string }

func (p *pendingIndex) add(identity, group, topic string, partition int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.groups == nil {
		p.groups = make(map[pendingGroup]map[coordinator.TopicPartition]int)
	}
	g := pendingGroup{identity, group}
	if p.groups[g] == nil {
		p.groups[g] = make(map[coordinator.TopicPartition]int)
	}
	p.groups[g][coordinator.TopicPartition{Topic: topic, Partition: partition}]++
}

// drop forgets the offset keys (qk:group: keys) one transaction staged.
func (p *pendingIndex) drop(identity string, keys map[string]bool) {
	if len(keys) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for key := range keys {
		group, topic, partition, ok := queen.ParseGroupOffsetKey(key)
		if !ok {
			continue
		}
		g := pendingGroup{identity, group}
		tp := coordinator.TopicPartition{Topic: topic, Partition: partition}
		if p.groups[g][tp]--; p.groups[g][tp] <= 0 {
			delete(p.groups[g], tp)
		}
		if len(p.groups[g]) == 0 {
			delete(p.groups, g)
		}
	}
}

// PendingOffsets is coordinator.Unstable in single mode: the partitions of
// group with an offset staged by a transaction this process holds open.
func (m *Manager) PendingOffsets(_ context.Context, identity string, _ coordinator.KV, group string) (map[coordinator.TopicPartition]bool, error) {
	m.pending.mu.Lock()
	defer m.pending.mu.Unlock()
	held := m.pending.groups[pendingGroup{identity, group}]
	if len(held) == 0 {
		return nil, nil
	}
	out := make(map[coordinator.TopicPartition]bool, len(held))
	for tp := range held {
		out[tp] = true
	}
	return out, nil
}

// pendingRow is the value of a qk:txnpend: row (cluster mode): which
// transaction staged an offset of the partition its key names.
type pendingRow struct {
	ID    string `json:"id"`
	PID   int64  `json:"pid"`
	Epoch int16  `json:"epoch"`
	Txn   uint64 `json:"txn"`
}

var errTruncatedPage = errors.New("reading the pending offsets: a truncated page without a cursor")

// ref is the transaction's part of its pending keys: one key per
// transaction, so that deleting the key of one that ended never deletes the
// next one's.
func (v pendingRow) ref() string {
	return strconv.FormatInt(v.PID, 10) + "." + strconv.FormatInt(int64(v.Epoch), 10) + "." + strconv.FormatUint(v.Txn, 10)
}

// pendingPage is how many qk:txnpend: rows one getPrefix reads.
const pendingPage = 1000

// PendingOffsets is coordinator.Unstable in cluster mode, at the group's
// coordinator: the qk:txnpend: rows of group name the transactions that
// staged an offset there (written with the o: row, by this node's
// TxnOffsetCommit), and each transaction's qk:txn: row says whether it is
// still open. That row, not the index, is the truth: a commit moves it in
// the same Queen transaction that writes the offsets, so an index row
// outliving its transaction (its delete is best effort, an abort writes
// none) is recognised as ended and costs only its read. A transaction past
// its timeout (and a sweep) is ended too: its owner drops its stage.
func (s *Shared) PendingOffsets(ctx context.Context, _ string, kv coordinator.KV, group string) (map[coordinator.TopicPartition]bool, error) {
	prefix := queen.TxnPendingGroupPrefix(group)
	var rows []queen.KVRow
	after := ""
	for {
		res, err := kv.KV(ctx, []queen.KVOp{{Op: queen.OpGetPrefix, NS: queen.Namespace, Prefix: prefix, Limit: pendingPage, After: after}})
		if err != nil {
			return nil, err
		}
		rows = append(rows, res[0].Rows...)
		if !res[0].Truncated {
			break
		}
		var ok bool
		if after, ok = res[0].NextCursor(after); !ok {
			return nil, errTruncatedPage
		}
	}
	if len(rows) == 0 {
		return nil, nil
	}
	type entry struct {
		tp coordinator.TopicPartition
		v  pendingRow
	}
	var entries []entry
	var keys []string
	seen := map[string]bool{}
	for _, row := range rows {
		g, topic, partition, ok := queen.ParseTxnPendingKey(row.Key)
		var v pendingRow
		if !ok || g != group || json.Unmarshal(row.Value, &v) != nil {
			s.log.Error("unreadable pending transactional offset row", "key", row.Key)
			continue
		}
		entries = append(entries, entry{coordinator.TopicPartition{Topic: topic, Partition: partition}, v})
		if k := queen.TxnKey(v.ID); !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	txns, err := queen.ReadKeys(ctx, kv, keys, collectKeysPerCall)
	if err != nil {
		return nil, err
	}
	now := s.clock.Now()
	out := map[coordinator.TopicPartition]bool{}
	for _, e := range entries {
		row, ok := txns[queen.TxnKey(e.v.ID)]
		if !ok {
			continue
		}
		mk, ok := readMarker(row.Value)
		if ok && openFor(mk, e.v, now) {
			out[e.tp] = true
		}
	}
	return out, nil
}

// openFor reports whether row mk still holds transaction v open.
func openFor(mk marker, v pendingRow, now time.Time) bool {
	if mk.State != rowOngoing || mk.PID != v.PID || mk.Epoch != v.Epoch || mk.Seq+1 != v.Txn {
		return false
	}
	if mk.Begin > 0 && mk.TimeoutMs > 0 {
		// The owner's sweep drops the stage once past the deadline.
		end := time.UnixMilli(mk.Begin).Add(time.Duration(mk.TimeoutMs)*time.Millisecond + 2*SweepInterval)
		return now.Before(end)
	}
	return true
}

// pendingOp is the qk:txnpend: row of one staged offset, living as long
// as its stage row.
func pendingOp(group, topic string, partition int32, v pendingRow, ttl int64) (queen.KVOp, bool) {
	key := queen.TxnPendingKey(group, topic, partition, v.ref())
	if len(key) > queen.MaxKeyBytes {
		return queen.KVOp{}, false
	}
	val, _ := json.Marshal(v)
	return queen.KVOp{Op: queen.OpPut, NS: queen.Namespace, Key: key, Value: val, TTLSeconds: ttl}, true
}
