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
	committed  int64
	leaseID    string
	expires    time.Time
	batchEnd   int64
	retries    int64
	retryLimit int64
	dead       map[int64]deadLetter
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

// seekToEnd: after the last record, lease released, budget reset.
func (m *consumeModel) seekToEnd() {
	m.committed, m.leaseID, m.retries, m.batchEnd = int64(len(m.log))-1, "", 0, int64(len(m.log))-1
}

// The property: driven by random pops, acks of random statuses on random
// messages (some already committed, some under a stale lease), lease
// expiries, seeks to the end and DLQ replays, queen-dev's pops, ack
// results, DLQ listing and group lag are exactly the model's.
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
			items = append(items, fmt.Sprintf(`{"queue":"p","partition":"0","transactionId":%q,"payload":{"o":%d}}`, id, len(m.log)-1))
		}
		if st, raw := e.post("/api/v1/push", `{"items":[`+strings.Join(items, ",")+"]}"); st != 201 {
			t.Fatalf("push: %d %s", st, raw)
		}
	}
	push(12)
	var pid, lease, stale string
	var pops, replays, deadOnes, rejected int
	defer func() {
		t.Logf("pops %d, dead letters %d, replays %d, stale-lease acks %d, log %d", pops, deadOnes, replays, rejected, len(m.log))
	}()
	statuses := []string{"completed", "completed", "failed", "retry", "dlq"}
	for step := 0; step < 250; step++ {
		switch r := rng.IntN(20); {
		case r < 7: // pop
			batch := 1 + rng.IntN(4)
			a := e.pop("/api/v1/pop/queue/p?consumerGroup=g&leaseSeconds=10&batch=" + strconv.Itoa(batch))
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
			if field(v, "result") != "moved" || num(field(v, "replayedAs", "offset")) != int64(len(m.log)) {
				t.Fatalf("step %d replay: %s", step, raw)
			}
			for off, dl := range m.dead {
				if dl.txID == d.txID {
					delete(m.dead, off)
				}
			}
			m.log = append(m.log, "dlq:"+id)
			replays++
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
	if lag := num(field(v, "p", "partitions", 0, "offsetLag")); field(v, "p") != nil && lag != int64(len(m.log))-1-m.committed {
		t.Fatalf("step %d lag %d, model %d: %s", step, lag, int64(len(m.log))-1-m.committed, raw)
	}
}
