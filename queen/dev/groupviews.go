package dev

import (
	"math"
	"net/http"
	"sort"
	"strconv"

	"github.com/queen-mq/queen-kafka/queen"
)

// The per-partition consumer-group views of queen-api-consume.md §6:
// GET /api/v1/consumer-groups/lagging and /{group}. Like the list view
// (groups.go) they read both stores, the pop cursors (kind "queen") and
// the facade's qk:group: rows (kind "kafka"), with one lag arithmetic:
// pending = log end − max(first unread, log start), never below 0; the
// time lag is the age of the first unread record still stored.

// groupCursor is one (group, partition) position of either kind.
type groupCursor struct {
	kind   string // "queen" or "kafka"
	group  string
	q      *queue
	p      *partition
	next   int64   // first unread offset
	cur    *cursor // the pop cursor (kind queen only)
	unread int64   // pending offsets
	oldest int64   // commit time of the first unread record, unix µs (0: none pending)
}

// groupCursors calls fn with every position of the tenant's groups (only
// the group named, when group is not ""), each with its lag filled in.
// The caller holds b.mu.
func (b *Broker) groupCursors(tenantName, group string, now int64, fn func(*groupCursor) error) error {
	t := b.st.tenant(tenantName)
	fill := func(g *groupCursor) error {
		start := max(g.next, g.p.lso)
		g.unread = max(g.p.hwm-start, 0)
		if g.unread > 0 {
			ts, ok, err := b.firstRecordTime(g.q.id, g.p, start)
			if err != nil {
				return err
			}
			if ok {
				g.oldest = ts
			}
		}
		return fn(g)
	}
	for _, q := range t.queues {
		prefix := queuePrefix(kindCursor, q.id)
		err := b.scan(prefix, func(k, v []byte) error {
			part, rest, err := readLP(k[len(prefix):])
			if err != nil {
				return err
			}
			if group != "" && string(rest) != group {
				return nil
			}
			cur, err := decodeCursor(v)
			if err != nil || q.parts[part] == nil {
				return err
			}
			return fill(&groupCursor{kind: "queen", group: string(rest), q: q, p: q.parts[part], next: cur.committed + 1, cur: cur})
		})
		if err != nil {
			return err
		}
	}
	nsLen := len(kvPrefix(tenantName, queen.Namespace))
	return b.scan(append(kvPrefix(tenantName, queen.Namespace), queen.PrefixGroup...), func(k, v []byte) error {
		row, err := decodeKV(v)
		if err != nil || !row.live(now) {
			return err
		}
		g, topic, part, ok := queen.ParseGroupOffsetKey(string(k[nsLen:]))
		if !ok || group != "" && g != group {
			return nil
		}
		off, ok := committedOffset(row.value)
		q := t.queues[topic]
		if !ok || q == nil || q.parts[strconv.Itoa(int(part))] == nil {
			return nil
		}
		return fill(&groupCursor{kind: "kafka", group: g, q: q, p: q.parts[strconv.Itoa(int(part))], next: off})
	})
}

// lagSeconds is how old the first unread record is (0 when none).
func (g *groupCursor) lagSeconds(now int64) int64 {
	if g.oldest == 0 {
		return 0
	}
	return max((now-g.oldest)/1e6, 0)
}

// workerID is the lease holding the position, if any.
func (g *groupCursor) workerID(now int64) any {
	if g.cur != nil && g.cur.leased(now) {
		return g.cur.leaseID
	}
	return nil
}

// handleLagging answers GET /api/v1/consumer-groups/lagging: one row per
// (group, partition) whose first unread record is older than
// minLagSeconds (3600), most lagging first.
func (b *Broker) handleLagging(w http.ResponseWriter, r *http.Request, c *call) {
	minLag := int64(qint(r, "minLagSeconds", 3600))
	if !b.enter() {
		writeError(w, http.StatusInternalServerError, "lagging failed: "+errClosed.Error())
		return
	}
	defer b.leave()
	now := b.now().UnixMicro()
	type row struct {
		secs int64
		m    map[string]any
	}
	var rows []row
	b.mu.Lock()
	err := b.groupCursors(c.tenant, "", now, func(g *groupCursor) error {
		secs := g.lagSeconds(now)
		if g.oldest == 0 || secs <= minLag {
			return nil
		}
		rows = append(rows, row{secs, map[string]any{
			"consumer_group": g.group, "queue_name": g.q.name, "partition_name": g.p.name,
			"partition_id": partitionID(g.q.id, g.p.name), "worker_id": g.workerID(now), "offset_lag": g.unread,
			"time_lag_seconds": secs, "lag_hours": math.Round(float64(secs)/36) / 100,
			"oldest_unconsumed_at": msTime(g.oldest), "last_consumed_at": nil, "kind": g.kind,
		}})
		return nil
	})
	if err := b.applyUnlock(nil, err); err != nil {
		writeError(w, http.StatusInternalServerError, "lagging failed: "+err.Error())
		return
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].secs > rows[j].secs })
	out := make([]map[string]any, len(rows))
	for i := range rows {
		out[i] = rows[i].m
	}
	writeJSON(w, http.StatusOK, out)
}

// handleGroupDetails answers GET /api/v1/consumer-groups/{group}: an
// object keyed by queue name, each with the group's partitions there and
// its subscription fields (as the list view's; nulls for a Kafka entry).
// Where a Queen group and a Kafka group share the name on one queue the
// native entry wins; kind says which store answered.
func (b *Broker) handleGroupDetails(w http.ResponseWriter, r *http.Request, c *call) {
	group := r.PathValue("group")
	if !b.enter() {
		writeError(w, http.StatusInternalServerError, "details failed: "+errClosed.Error())
		return
	}
	defer b.leave()
	now := b.now().UnixMicro()
	type entry struct {
		kind  string
		parts []map[string]any
		sub   *subscription // kind queen: the group's subscription on the queue
	}
	byQueue := map[string]*entry{}
	b.mu.Lock()
	err := b.groupCursors(c.tenant, group, now, func(g *groupCursor) error {
		e := byQueue[g.q.name]
		if e == nil || e.kind == "kafka" && g.kind == "queen" {
			e = &entry{kind: g.kind}
			if g.kind == "queen" {
				var err error
				if e.sub, err = b.getSub(g.q.id, group); err != nil {
					return err
				}
			}
			byQueue[g.q.name] = e
		}
		if e.kind != g.kind {
			return nil
		}
		consumed := g.next // a Kafka commit: the offsets before it
		if g.cur != nil {
			consumed = g.cur.consumed
		}
		e.parts = append(e.parts, map[string]any{
			"partition": g.p.name, "workerId": g.workerID(now), "lastConsumedAt": nil, "totalConsumed": consumed,
			"offsetLag": g.unread, "timeLagSeconds": g.lagSeconds(now), "leaseActive": g.cur != nil && g.cur.leased(now),
		})
		return nil
	})
	if err := b.applyUnlock(nil, err); err != nil {
		writeError(w, http.StatusInternalServerError, "details failed: "+err.Error())
		return
	}
	out := map[string]any{}
	for name, e := range byQueue {
		sort.Slice(e.parts, func(i, j int) bool { return e.parts[i]["partition"].(string) < e.parts[j]["partition"].(string) })
		mode, ts, created := subFields(e.sub)
		out[name] = map[string]any{"conflation": false, "kind": e.kind, "partitions": e.parts,
			"subscriptionMode": mode, "subscriptionTimestamp": ts, "subscriptionCreatedAt": created}
	}
	writeJSON(w, http.StatusOK, out)
}
