package dev

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// consumeModel is queen-api-consume.md §3–§6 for one partition and one
// group, written from the contract's rules: the cursor (committed, lease,
// batch end, retry counter), the dead letters, and the log.
type consumeModel struct {
	log        []string // transactionId by offset
	ts         []int64  // commit time by offset, unix µs
	hasCursor  bool     // the group has a cursor (first contact seeds one)
	sub        *modelSub
	committed  int64
	leaseID    string
	expires    time.Time
	batchEnd   int64
	retries    int64
	retryLimit int64
	dead       map[int64]deadLetter
}

// modelSub is the group's stored subscription on the queue (§2, §6):
// what its first queue-form pop asked for.
type modelSub struct {
	mode string
	ts   int64 // unix µs; 0 for "all"
}

// modelIntent is one pop's subscriptionMode/subscriptionFrom: from is a
// timestamp (unix µs) when not 0; a timestamp wins over new.
type modelIntent struct {
	query string
	isNew bool
	from  int64
}

// firstAtOrAfter is the committed position that makes the first record
// stored at or after ts the next one (the end when there is none).
func (m *consumeModel) firstAtOrAfter(ts int64) int64 {
	for off, t := range m.ts {
		if t >= ts {
			return int64(off) - 1
		}
	}
	return int64(len(m.log)) - 1
}

// contact is a queue-form pop's first look at the group: with no stored
// subscription it registers one from the pop's intent (a cursor it has
// none of is seeded by that intent); else a missing cursor is seeded from
// the stored timestamp. Existing cursors are never re-seeded.
func (m *consumeModel) contact(now int64, in modelIntent) {
	seed := func(committed int64) {
		m.committed, m.leaseID, m.retries, m.batchEnd, m.hasCursor = committed, "", 0, 0, true
	}
	if m.sub == nil {
		switch {
		case in.from != 0:
			m.sub = &modelSub{mode: "timestamp", ts: in.from}
		case in.isNew:
			m.sub = &modelSub{mode: "new", ts: now}
		default:
			m.sub = &modelSub{mode: "all"}
		}
		if !m.hasCursor {
			switch {
			case in.from != 0:
				seed(m.firstAtOrAfter(in.from))
			case in.isNew:
				seed(int64(len(m.log)) - 1)
			default:
				seed(-1)
			}
		}
		return
	}
	if !m.hasCursor {
		if m.sub.ts <= 0 {
			seed(-1)
		} else {
			seed(m.firstAtOrAfter(m.sub.ts))
		}
	}
}

// deleteGroup drops the cursor (and its lease), and the subscription
// with the metadata.
func (m *consumeModel) deleteGroup(metadata bool) {
	m.hasCursor, m.leaseID, m.retries = false, "", 0
	if metadata {
		m.sub = nil
	}
}

type deadLetter struct {
	txID, reason string
	retries      int64
}

func (m *consumeModel) leased(now time.Time) bool { return m.leaseID != "" && now.Before(m.expires) }

// pop: nothing while the lease lives or nothing is left; else the span
// from committed+1, leased (an expired lease is re-claimed uncharged).
func (m *consumeModel) pop(now time.Time, batch int, leaseID string, secs int) []string {
	start := m.committed + 1
	if m.leased(now) || start >= int64(len(m.log)) {
		return nil
	}
	end := min(start+int64(batch), int64(len(m.log)))
	m.leaseID, m.expires, m.batchEnd = leaseID, now.Add(time.Duration(secs)*time.Second), end-1
	return m.log[start:end]
}

type modelAck struct {
	off    int64
	status string // completed, failed, retry, dlq
	reason string
}

type modelResult struct{ success, released, dlq, noop bool }

// ack applies one call's items (all under leaseID; "" = no lease check)
// to the cursor.
func (m *consumeModel) ack(now time.Time, leaseID string, items []modelAck) []modelResult {
	res := make([]modelResult, len(items))
	if leaseID != "" && (!m.leased(now) || m.leaseID != leaseID) {
		return res // every item: invalid or expired lease
	}
	rank := map[string]int{"retry": 1, "failed": 2, "dlq": 3}
	failAt, failIdx := int64(-1), -1
	var live []int
	for i, it := range items {
		if it.off <= m.committed {
			res[i] = modelResult{success: it.status == "completed", noop: it.status == "completed"}
			continue
		}
		live = append(live, i)
		if it.status != "completed" && (failAt < 0 || it.off < failAt || it.off == failAt && rank[it.status] > rank[items[failIdx].status]) {
			failAt, failIdx = it.off, i
		}
	}
	released, dlqIdx := false, -1
	switch {
	case failAt < 0:
		for _, i := range live {
			m.committed = max(m.committed, items[i].off)
		}
		released = m.committed >= m.batchEnd
		if released {
			m.retries = 0
		}
	case items[failIdx].status == "retry":
		m.committed, released = failAt-1, true
	case items[failIdx].status == "failed" && m.retries < m.retryLimit:
		m.committed, released = failAt-1, true
		m.retries++
	default:
		reason := items[failIdx].reason
		if reason == "" {
			reason = "Retries exhausted"
		}
		m.dead[failAt] = deadLetter{txID: m.log[failAt], reason: reason, retries: m.retries}
		m.committed, released, dlqIdx = failAt, true, failIdx
		m.retries = 0
	}
	if released {
		m.leaseID = ""
	}
	for _, i := range live {
		res[i] = modelResult{success: true, released: released, dlq: i == dlqIdx}
	}
	return res
}

// seekToEnd: after the last record, lease released, budget reset; the
// cursor is created if absent (the subscription is not).
func (m *consumeModel) seekToEnd() {
	m.committed, m.leaseID, m.retries, m.batchEnd = int64(len(m.log))-1, "", 0, int64(len(m.log))-1
	m.hasCursor = true
}

// The property: driven by random pops (each with a random subscription
// intent), acks of random statuses on random messages (some already
// committed, some under a stale lease), lease expiries, seeks to the end,
// DLQ replays, group deletes (with and without the metadata) and
// subscription timestamp updates, queen-dev's pops, ack results, DLQ
// listing, group lag and subscription fields are exactly the model's.
func TestConsumeStateMachineProperty(t *testing.T) {
	for seed := uint64(1); seed <= 12; seed++ {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) { runConsumeModel(t, seed) })
	}
}

func runConsumeModel(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 24))
	clk := newFakeClock()
	e := newEnv(t, Options{Now: clk.Now})
	limit := int64(rng.IntN(3))
	if _, err := e.qc.Configure(ctx(t), "p", map[string]any{"retryLimit": limit}); err != nil {
		t.Fatal(err)
	}
	m := &consumeModel{committed: -1, retryLimit: limit, dead: map[int64]deadLetter{}}
	push := func(k int) {
		var items []string
		for i := 0; i < k; i++ {
			id := fmt.Sprintf("m-%d", len(m.log))
			m.log = append(m.log, id)
			m.ts = append(m.ts, clk.Now().UnixMicro())
			items = append(items, fmt.Sprintf(`{"queue":"p","partition":"0","transactionId":%q,"payload":{"o":%d}}`, id, len(m.log)-1))
		}
		if st, raw := e.post("/api/v1/push", `{"items":[`+strings.Join(items, ",")+"]}"); st != 201 {
			t.Fatalf("push: %d %s", st, raw)
		}
	}
	push(12)
	var pid, lease, stale string
	var pops, replays, deadOnes, rejected, deletes, updates int
	defer func() {
		t.Logf("pops %d, dead letters %d, replays %d, stale-lease acks %d, deletes %d, subscription updates %d, log %d",
			pops, deadOnes, replays, rejected, deletes, updates, len(m.log))
	}()
	statuses := []string{"completed", "completed", "failed", "retry", "dlq"}
	// someTime is a moment near the log's: a record's commit time, just
	// after it, or now.
	someTime := func() int64 {
		if len(m.ts) == 0 || rng.IntN(4) == 0 {
			return clk.Now().UnixMicro()
		}
		return m.ts[rng.IntN(len(m.ts))] + int64(rng.IntN(2))
	}
	replayed := map[string]bool{}
	iso := func(us int64) string { return time.UnixMicro(us).UTC().Format(time.RFC3339Nano) }
	for step := 0; step < 250; step++ {
		switch r := rng.IntN(23); {
		case r < 7: // pop
			batch := 1 + rng.IntN(4)
			var in modelIntent
			switch rng.IntN(4) {
			case 1:
				in = modelIntent{query: "&subscriptionMode=new", isNew: true}
			case 2:
				in = modelIntent{query: "&subscriptionFrom=now", isNew: true}
			case 3:
				in.from = someTime()
				in.query = "&subscriptionMode=" + []string{"all", "new"}[rng.IntN(2)] + "&subscriptionFrom=" + iso(in.from)
			}
			m.contact(clk.Now().UnixMicro(), in)
			a := e.pop("/api/v1/pop/queue/p?consumerGroup=g&leaseSeconds=10&batch=" + strconv.Itoa(batch) + in.query)
			var got []string
			if a != nil {
				for _, msg := range a.Messages {
					got = append(got, msg.TransactionID)
				}
				pid, stale, lease = a.PartitionID, lease, a.LeaseID
				pops++
			}
			want := m.pop(clk.Now(), batch, lease, 10)
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("step %d pop: got %v, model %v", step, got, want)
			}
		case r < 14 && pid != "": // ack
			var items []modelAck
			used := map[int64]bool{}
			for k := 1 + rng.IntN(3); k > 0; k-- {
				off := rng.Int64N(min(m.batchEnd, int64(len(m.log))-1) + 1)
				if !used[off] {
					used[off] = true
					items = append(items, modelAck{off: off, status: statuses[rng.IntN(len(statuses))], reason: []string{"", "boom"}[rng.IntN(2)]})
				}
			}
			l := lease
			if rng.IntN(8) == 0 {
				l = stale
			}
			var acks []string
			for _, it := range items {
				b, _ := json.Marshal(map[string]string{"transactionId": m.log[it.off], "partitionId": pid, "status": it.status, "leaseId": l, "error": it.reason})
				acks = append(acks, string(b))
			}
			got := e.ack(`{"consumerGroup":"g","acknowledgments":[` + strings.Join(acks, ",") + `]}`)
			want := m.ack(clk.Now(), l, items)
			for _, w := range want {
				if w.dlq {
					deadOnes++
				}
			}
			if l != lease {
				rejected++
			}
			for i := range want {
				g := modelResult{success: got[i].Success, released: got[i].LeaseReleased, dlq: got[i].DLQ, noop: got[i].Noop}
				if g != want[i] {
					t.Fatalf("step %d ack %+v under %q: item %d got %+v (error %v), model %+v", step, items, l, i, g, got[i].Error, want[i])
				}
			}
		case r < 16: // a lease expires
			clk.Advance(11 * time.Second)
		case r < 17: // seek to the end
			st, raw := e.post("/api/v1/consumer-groups/g/queues/p/seek", `{"toEnd":true}`)
			wantStatus(t, st, raw, 200)
			m.seekToEnd()
			push(1 + rng.IntN(3))
		case r < 19 && len(m.dead) > 0: // replay a dead letter
			rows := dlqList(t, e, "?queue=p")
			var offs []int64
			for off := range m.dead {
				offs = append(offs, off)
			}
			sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
			d := m.dead[offs[rng.IntN(len(offs))]]
			id := ""
			for _, row := range rows {
				if row["transactionId"] == d.txID {
					id = row["id"].(string)
				}
			}
			st, raw := e.post("/api/v1/dlq/"+id+"/replay", "")
			v := wantStatus(t, st, raw, 200)
			if replayed[id] { // dead-lettered again after a group delete: a dedup duplicate, the row kept
				if field(v, "result") != "duplicate" {
					t.Fatalf("step %d replay again: %s", step, raw)
				}
				break
			}
			replayed[id] = true
			if field(v, "result") != "moved" || num(field(v, "replayedAs", "offset")) != int64(len(m.log)) {
				t.Fatalf("step %d replay: %s", step, raw)
			}
			for off, dl := range m.dead {
				if dl.txID == d.txID {
					delete(m.dead, off)
				}
			}
			m.log = append(m.log, "dlq:"+id)
			m.ts = append(m.ts, clk.Now().UnixMicro())
			replays++
		case r == 20: // delete the group
			meta := rng.IntN(2) == 0
			st, raw, _ := e.do("DELETE", "/api/v1/consumer-groups/g?deleteMetadata="+strconv.FormatBool(meta), "", "")
			v := wantStatus(t, st, raw, 200)
			if want := int64(0); m.hasCursor && num(field(v, "deletedPartitions")) != 1 || !m.hasCursor && num(field(v, "deletedPartitions")) != want {
				t.Fatalf("step %d delete: %s", step, raw)
			}
			m.deleteGroup(meta)
			deletes++
		case r == 21: // move the subscription's timestamp
			at := someTime()
			st, raw := e.post("/api/v1/consumer-groups/g/subscription", `{"subscriptionTimestamp":"`+iso(at)+`"}`)
			v := wantStatus(t, st, raw, 200)
			want := int64(0)
			if m.sub != nil {
				m.sub.ts, want = at, 1
			}
			if num(field(v, "rowsUpdated")) != want {
				t.Fatalf("step %d subscription: %s", step, raw)
			}
			updates++
		default:
			push(1)
		}
		checkDLQAndLag(t, e, m, step)
	}
}

func dlqList(t *testing.T, e *env, query string) []map[string]any {
	t.Helper()
	st, raw, _ := e.do("GET", "/api/v1/dlq"+query, "", "")
	if st != 200 {
		t.Fatalf("dlq: %d %s", st, raw)
	}
	var body struct{ Messages []map[string]any }
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatal(err)
	}
	return body.Messages
}

// checkDLQAndLag compares the DLQ listing and the group's lag with m.
func checkDLQAndLag(t *testing.T, e *env, m *consumeModel, step int) {
	t.Helper()
	var got, want []string
	for _, row := range dlqList(t, e, "?queue=p&consumerGroup=g") {
		got = append(got, fmt.Sprintf("%v/%v/%v", row["transactionId"], row["errorMessage"], row["retryCount"]))
	}
	for _, d := range m.dead {
		want = append(want, fmt.Sprintf("%s/%s/%d", d.txID, d.reason, d.retries))
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("step %d dlq: got %v, model %v", step, got, want)
	}
	st, raw, _ := e.do("GET", "/api/v1/consumer-groups/g", "", "")
	v := wantStatus(t, st, raw, 200)
	if (field(v, "p") != nil) != m.hasCursor {
		t.Fatalf("step %d: cursor %v in the model: %s", step, m.hasCursor, raw)
	}
	if lag := num(field(v, "p", "partitions", 0, "offsetLag")); m.hasCursor && lag != int64(len(m.log))-1-m.committed {
		t.Fatalf("step %d lag %d, model %d: %s", step, lag, int64(len(m.log))-1-m.committed, raw)
	}
	var mode, ts any
	if m.sub != nil {
		mode, ts = m.sub.mode, msTime(m.sub.ts)
	}
	if m.hasCursor && (field(v, "p", "subscriptionMode") != mode || field(v, "p", "subscriptionTimestamp") != ts) {
		t.Fatalf("step %d subscription %v %v in the model: %s", step, mode, ts, raw)
	}
}
