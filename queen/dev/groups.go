package dev

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sort"
	"strconv"

	"github.com/queen-mq/queen-kafka/queen"
)

// GET /api/v1/consumer-groups (queen-api-consume.md §6): one row per
// (group, queue, kind). Kind "queen" rows are the pop cursors; kind
// "kafka" rows are the facade's committed offsets, read from the qk:group:
// rows of the caller's tenant in namespace queen-kafka. The view only
// reads them; KV stays the one source of a Kafka offset.

// groupRow is one row of the list view, in the contract's field order.
type groupRow struct {
	Name                  string   `json:"name"`
	Topics                []string `json:"topics"`
	QueueName             string   `json:"queueName"`
	Members               int64    `json:"members"`
	PartitionCursors      int64    `json:"partitionCursors"`
	PartitionsWithLag     int64    `json:"partitionsWithLag"`
	TotalLag              int64    `json:"totalLag"`
	MaxTimeLag            int64    `json:"maxTimeLag"`
	State                 string   `json:"state"`
	Storage               string   `json:"storage"`
	SubscriptionMode      *string  `json:"subscriptionMode"`
	SubscriptionTimestamp *string  `json:"subscriptionTimestamp"`
	SubscriptionCreatedAt *string  `json:"subscriptionCreatedAt"`
	Conflation            bool     `json:"conflation"`
	Kind                  string   `json:"kind"`
}

// laggingAfter is the time lag past which a group's state is "Lagging".
const laggingAfter = 300 // seconds

func (b *Broker) handleConsumerGroups(w http.ResponseWriter, r *http.Request, c *call) {
	if !b.enter() {
		writeError(w, http.StatusInternalServerError, "consumer groups failed: "+errClosed.Error())
		return
	}
	defer b.leave()
	now := b.now().UnixMicro()
	b.mu.Lock()
	// Under b.mu the KV rows and the partitions' ends are one moment's.
	rows, err := b.kafkaGroupRows(c.tenant, now)
	if err := b.applyUnlock(nil, err); err != nil {
		writeError(w, http.StatusInternalServerError, "consumer groups failed: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, rows)
}

// kafkaGroupRows folds the tenant's live qk:group: rows into list rows,
// sorted by group then queue. A row counts only if its value holds a
// numeric offset and it names a partition of a queue of the tenant that
// exists; the lag of a partition is its log end minus the committed offset
// (the next offset to read) or its log start, whichever is later, never
// below 0 (retired records are not lag); the time lag is the age of the
// first record still to read. The caller holds b.mu.
func (b *Broker) kafkaGroupRows(tenantName string, now int64) ([]groupRow, error) {
	t := b.st.tenant(tenantName)
	byKey := map[[2]string]*groupRow{}
	prefix := append(kvPrefix(tenantName, queen.Namespace), queen.PrefixGroup...)
	nsLen := len(kvPrefix(tenantName, queen.Namespace))
	err := b.scan(prefix, func(k, v []byte) error {
		row, err := decodeKV(v)
		if err != nil {
			return err
		}
		if !row.live(now) {
			return nil
		}
		group, topic, part, ok := queen.ParseGroupOffsetKey(string(k[nsLen:]))
		if !ok {
			return nil
		}
		off, ok := committedOffset(row.value)
		if !ok {
			return nil
		}
		q := t.queues[topic]
		if q == nil {
			return nil
		}
		p := q.parts[strconv.FormatInt(int64(part), 10)]
		if p == nil {
			return nil
		}
		g := byKey[[2]string{group, topic}]
		if g == nil {
			g = &groupRow{Name: group, Topics: []string{topic}, QueueName: topic, Storage: "segments", Kind: "kafka"}
			byKey[[2]string{group, topic}] = g
		}
		g.Members++
		g.PartitionCursors++
		lag := max(p.hwm-max(off, p.lso), 0)
		if lag == 0 {
			return nil
		}
		g.PartitionsWithLag++
		g.TotalLag += lag
		secs, err := b.recordAge(q.id, p, max(off, p.lso), now)
		if err != nil {
			return err
		}
		g.MaxTimeLag = max(g.MaxTimeLag, secs)
		return nil
	})
	if err != nil {
		return nil, err
	}
	rows := make([]groupRow, 0, len(byKey))
	for _, g := range byKey {
		// A committed offset is itself evidence of consumption: a Kafka
		// row is never "Dead".
		g.State = "Stable"
		if g.MaxTimeLag > laggingAfter {
			g.State = "Lagging"
		}
		rows = append(rows, *g)
	}
	native, err := b.queenGroupRows(t, now)
	if err != nil {
		return nil, err
	}
	rows = append(rows, native...)
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Name != rows[j].Name {
			return rows[i].Name < rows[j].Name
		}
		if rows[i].QueueName != rows[j].QueueName {
			return rows[i].QueueName < rows[j].QueueName
		}
		return rows[i].Kind > rows[j].Kind // queen before kafka
	})
	return rows, nil
}

// queenGroupRows are the pop cursors (kind c) of the tenant's queues, one
// row per (group, queue), kind "queen": a cursor's committed is the last
// offset done, so its lag is the log end minus committed+1 (or the log
// start, if later). A group whose
// cursors never moved is "Dead". The subscription fields are the group's
// stored subscription on the queue (kind s), nulls when it has none (a
// group only ever popped by partition). The caller holds b.mu.
func (b *Broker) queenGroupRows(t *tenant, now int64) ([]groupRow, error) {
	var rows []groupRow
	for _, q := range t.queues {
		byGroup := map[string]*groupRow{}
		consumed := map[string]int64{}
		prefix := queuePrefix(kindCursor, q.id)
		err := b.scan(prefix, func(k, v []byte) error {
			part, rest, err := readLP(k[len(prefix):])
			if err != nil {
				return err
			}
			group := string(rest)
			cur, err := decodeCursor(v)
			if err != nil {
				return err
			}
			p := q.parts[part]
			if p == nil {
				return nil
			}
			g := byGroup[group]
			if g == nil {
				g = &groupRow{Name: group, Topics: []string{q.name}, QueueName: q.name, Storage: "segments", Kind: "queen"}
				byGroup[group] = g
			}
			g.Members++
			g.PartitionCursors++
			consumed[group] += cur.consumed
			lag := max(p.hwm-max(cur.committed+1, p.lso), 0)
			if lag == 0 {
				return nil
			}
			g.PartitionsWithLag++
			g.TotalLag += lag
			secs, err := b.recordAge(q.id, p, max(cur.committed+1, p.lso), now)
			g.MaxTimeLag = max(g.MaxTimeLag, secs)
			return err
		})
		if err != nil {
			return nil, err
		}
		for name, g := range byGroup {
			sub, err := b.getSub(q.id, name)
			if err != nil {
				return nil, err
			}
			g.SubscriptionMode, g.SubscriptionTimestamp, g.SubscriptionCreatedAt = subFields(sub)
			switch {
			case consumed[name] == 0:
				g.State = "Dead"
			case g.MaxTimeLag > laggingAfter:
				g.State = "Lagging"
			default:
				g.State = "Stable"
			}
			rows = append(rows, *g)
		}
	}
	return rows, nil
}

// committedOffset reads {"offset":<integer>} as the facade writes it; a
// missing, null, string or fractional offset is not a commit.
func committedOffset(v []byte) (int64, bool) {
	var body struct {
		Offset json.RawMessage `json:"offset"`
	}
	if json.Unmarshal(v, &body) != nil {
		return 0, false
	}
	raw := bytes.TrimSpace(body.Offset)
	if len(raw) == 0 || raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		return 0, false
	}
	off, err := strconv.ParseInt(string(raw), 10, 64)
	return off, err == nil
}

// recordAge is the age in whole seconds of the first stored record of p at
// or after off (0 when none is stored there).
func (b *Broker) recordAge(qid string, p *partition, off int64, now int64) (int64, error) {
	ts, ok, err := b.firstRecordTime(qid, p, off)
	if !ok || err != nil {
		return 0, err
	}
	return max((now-ts)/1e6, 0), nil
}

// firstRecordTime is the commit time (unix µs) of the first stored record
// of p at or after off; ok is false when none is stored there.
func (b *Broker) firstRecordTime(qid string, p *partition, off int64) (ts int64, ok bool, err error) {
	ri := b.records(qid, p.name, off, p.hwm)
	if _, rec, found := ri.next(); found {
		ts, ok = rec.ts, true
	}
	return ts, ok, ri.close()
}
