package dev

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/queen-mq/queen-kafka/internal/jsontext"
)

// Ack (queen-api-consume.md §4): items are grouped by (partition, group)
// and each group moves its cursor once; the whole call is one batch.

// ackWindow is how far below a cursor an ack still finds its message (to
// answer noop or "already committed" rather than "unresolvable").
const ackWindow = 10000

type ackItem struct {
	TransactionID string `json:"transactionId"`
	PartitionID   string `json:"partitionId"`
	Status        string `json:"status"`
	ConsumerGroup string `json:"consumerGroup"`
	LeaseID       string `json:"leaseId"`
	Error         string `json:"error"`
}

type ackResult struct {
	Index         int     `json:"index"`
	TransactionID string  `json:"transactionId"`
	Success       bool    `json:"success"`
	Error         *string `json:"error"`
	LeaseReleased bool    `json:"leaseReleased"`
	DLQ           bool    `json:"dlq"`
	Noop          bool    `json:"noop"`
}

type ackStatus int

const (
	ackCompleted ackStatus = iota
	ackRetry
	ackFailed
	ackDLQ
)

// normalizeAck: absent and the success words are completed, retry and dlq
// are themselves, anything else is failed.
func normalizeAck(s string) ackStatus {
	switch s {
	case "", "completed", "success", "acked", "ok":
		return ackCompleted
	case "retry":
		return ackRetry
	case "dlq":
		return ackDLQ
	}
	return ackFailed
}

const (
	errInvalidLease     = "invalid or expired lease"
	errNoConsumer       = "consumer not found"
	errNotOwned         = "partition not owned by tenant"
	errAlreadyCommitted = "already committed: the cursor moved past this message before this ack"
	errUnresolvable     = "unresolvable: transaction not in the ack window"
)

func (b *Broker) handleAck(w http.ResponseWriter, r *http.Request, c *call) {
	var it ackItem
	if err := json.Unmarshal(c.body, &it); err != nil {
		badBody(w, err.Error())
		return
	}
	b.writeAcks(w, c.tenant, []ackItem{it})
}

func (b *Broker) handleAckBatch(w http.ResponseWriter, r *http.Request, c *call) {
	var body struct {
		ConsumerGroup   string     `json:"consumerGroup"`
		Acknowledgments *[]ackItem `json:"acknowledgments"`
	}
	if err := json.Unmarshal(c.body, &body); err != nil {
		badBody(w, err.Error())
		return
	}
	if body.Acknowledgments == nil {
		badBody(w, "acknowledgments is required")
		return
	}
	items := *body.Acknowledgments
	for i := range items {
		if items[i].ConsumerGroup == "" {
			items[i].ConsumerGroup = body.ConsumerGroup
		}
	}
	b.writeAcks(w, c.tenant, items)
}

// ackSlot is one (partition, group) unit of a call.
type ackSlot struct {
	q       *queue
	part    string
	group   string
	indexes []int
}

func (b *Broker) writeAcks(w http.ResponseWriter, tenantName string, items []ackItem) {
	res, err := b.ackItems(tenantName, items)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "ack failed: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// ackItems applies items for tenantName and returns the results in
// request order.
func (b *Broker) ackItems(tenantName string, items []ackItem) ([]ackResult, error) {
	if !b.enter() {
		return nil, errClosed
	}
	defer b.leave()
	b.mu.Lock()
	batch := b.db.NewBatch()
	res, err := b.planAcks(batch, tenantName, items, b.now().UnixMicro())
	if err != nil {
		batch.Close()
		b.mu.Unlock()
		return nil, err
	}
	tail := b.apply(batch, nil)
	b.mu.Unlock()
	if err := tail.wait(); err != nil {
		return nil, err
	}
	return res, nil
}

// planAcks writes what items do to their cursors into batch and returns
// the results in request order (a transaction's ack operations join its
// batch this way). The caller holds b.mu.
func (b *Broker) planAcks(batch *pebble.Batch, tenantName string, items []ackItem, nowUS int64) ([]ackResult, error) {
	res := make([]ackResult, len(items))
	fail := func(i int, msg string) {
		m := msg
		res[i] = ackResult{Index: i, TransactionID: items[i].TransactionID, Error: &m}
	}
	t := b.st.tenant(tenantName)
	byPID := map[string][2]string{}
	for _, q := range t.queues {
		for n := range q.parts {
			byPID[partitionID(q.id, n)] = [2]string{q.name, n}
		}
	}
	slots := map[[3]string]*ackSlot{}
	var order [][3]string
	for i := range items {
		it := &items[i]
		if it.ConsumerGroup == "" {
			it.ConsumerGroup = queueModeGroup
		}
		loc, ok := byPID[it.PartitionID]
		if !ok {
			fail(i, errNotOwned)
			continue
		}
		k := [3]string{loc[0], loc[1], it.ConsumerGroup}
		s := slots[k]
		if s == nil {
			s = &ackSlot{q: t.queues[loc[0]], part: loc[1], group: it.ConsumerGroup}
			slots[k] = s
			order = append(order, k)
		}
		s.indexes = append(s.indexes, i)
	}
	for _, k := range order {
		if err := b.ackSlot(batch, slots[k], items, res, fail, nowUS); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// ackSlot applies one (partition, group)'s items to its cursor.
func (b *Broker) ackSlot(batch *pebble.Batch, s *ackSlot, items []ackItem, res []ackResult, fail func(int, string), now int64) error {
	cur, err := b.getCursor(s.q.id, s.part, s.group)
	if err != nil {
		return err
	}
	if cur == nil {
		for _, i := range s.indexes {
			fail(i, errNoConsumer)
		}
		return nil
	}
	for _, i := range s.indexes {
		if l := items[i].LeaseID; l != "" && (!cur.leased(now) || cur.leaseID != l) {
			for _, j := range s.indexes {
				fail(j, errInvalidLease)
			}
			return nil
		}
	}
	part := s.q.parts[s.part]
	// Resolve transactionIds to offsets from just below the cursor to the
	// end of the leased span.
	want := map[string]int64{}
	for _, i := range s.indexes {
		want[items[i].TransactionID] = -1
	}
	lo := max(part.lso, cur.committed+1-ackWindow)
	hi := min(max(cur.batchEnd, cur.committed)+1, part.hwm)
	recs := map[int64][]byte{} // offset → stored value, for dead letters
	if lo < hi {
		ri := b.records(s.q.id, s.part, lo, hi)
		for o, rec, ok := ri.next(); ok; o, rec, ok = ri.next() {
			// The last match wins: an id stored twice resolves to the
			// copy nearer the cursor's window.
			if _, ok := want[string(rec.transactionID())]; ok {
				want[string(rec.transactionID())] = o
				if o > cur.committed {
					recs[o] = appendRecordValue(nil, rec)
				}
			}
		}
		if err := ri.close(); err != nil {
			return err
		}
	}
	failAt, failStatus, failIdx := int64(-1), ackCompleted, -1
	highDone := cur.committed
	var live []int
	for _, i := range s.indexes {
		off := want[items[i].TransactionID]
		st := normalizeAck(items[i].Status)
		switch {
		case off < 0:
			fail(i, errUnresolvable)
			continue
		case off <= cur.committed:
			if st != ackCompleted {
				fail(i, errAlreadyCommitted)
				continue
			}
			res[i] = ackResult{Index: i, TransactionID: items[i].TransactionID, Success: true, Noop: true}
			continue
		}
		live = append(live, i)
		if st == ackCompleted {
			continue
		}
		if failAt < 0 || off < failAt || off == failAt && st > failStatus {
			failAt, failStatus, failIdx = off, st, i
		}
	}
	for _, i := range live {
		off := want[items[i].TransactionID]
		if normalizeAck(items[i].Status) == ackCompleted && (failAt < 0 || off < failAt) {
			highDone = max(highDone, off)
		}
	}
	released, dlqIdx := false, -1
	next := *cur
	deadLetter := func(reason string) error {
		rec, err := decodeRecord(recs[failAt])
		if err != nil {
			return err
		}
		batch.Set(keyDLQ(s.q.id, s.part, s.group, failAt), encodeDLQ(rec, reason, cur.retries, now), nil)
		dlqIdx = failIdx
		return nil
	}
	switch {
	case failAt < 0:
		next.committed = highDone
		released = next.committed >= cur.batchEnd
	case failStatus == ackRetry:
		next.committed, released = failAt-1, true
	case failStatus == ackFailed && cur.retries < s.q.opts[optRetryLimit].num:
		next.committed, released = failAt-1, true
		next.retries++
	default: // dlq, or failed past the budget
		next.committed, released = failAt, true
		if failStatus == ackDLQ || s.q.opts[optDeadLetterQueue].bool || s.q.opts[optDlqAfterRetries].bool {
			reason := items[failIdx].Error
			if reason == "" {
				reason = "Retries exhausted"
			}
			if err := deadLetter(reason); err != nil {
				return err
			}
		}
		next.retries = 0
	}
	if released {
		if failAt < 0 {
			next.retries = 0
		}
		if cur.leaseID != "" {
			batch.Delete(keyLease(cur.leaseID, s.q.id, s.part, s.group), nil)
		}
		next.leaseID, next.leaseExpires = "", 0
	}
	next.consumed += max(next.committed-cur.committed, 0)
	batch.Set(keyCursor(s.q.id, s.part, s.group), encodeCursor(&next), nil)
	for _, i := range live {
		res[i] = ackResult{Index: i, TransactionID: items[i].TransactionID, Success: true, LeaseReleased: released, DLQ: i == dlqIdx}
	}
	return nil
}

// handleExtend renews every live lease of the leaseId (never shortens,
// never revives), always 200.
func (b *Broker) handleExtend(w http.ResponseWriter, r *http.Request, c *call) {
	leaseID := r.PathValue("leaseId")
	secs := int64(60)
	var body struct {
		Seconds *json.Number `json:"seconds"`
	}
	if len(bytes.TrimSpace(c.body)) > 0 && json.Unmarshal(c.body, &body) == nil && body.Seconds != nil {
		if n, err := strconv.ParseFloat(string(*body.Seconds), 64); err == nil {
			secs = int64(n)
		}
	}
	secs = max(secs, 1)
	if !b.enter() {
		writeError(w, http.StatusInternalServerError, "renew failed: "+errClosed.Error())
		return
	}
	defer b.leave()
	now := b.now().UnixMicro()
	b.mu.Lock()
	owned := map[string]bool{}
	for _, q := range b.st.tenant(c.tenant).queues {
		owned[q.id] = true
	}
	batch := b.db.NewBatch()
	renewed, earliest := 0, int64(0)
	prefix := appendLP([]byte{kindLease}, leaseID)
	err := b.scan(prefix, func(k, _ []byte) error {
		qid, rest, err := readLP(k[len(prefix):])
		if err != nil {
			return err
		}
		part, rest, err := readLP(rest)
		if err != nil {
			return err
		}
		group := string(rest)
		if !owned[qid] {
			return nil
		}
		cur, err := b.getCursor(qid, part, group)
		if err != nil || cur == nil || cur.leaseID != leaseID || !cur.leased(now) {
			return err
		}
		cur.leaseExpires = max(cur.leaseExpires, now+secs*1e6)
		batch.Set(keyCursor(qid, part, group), encodeCursor(cur), nil)
		if renewed == 0 || cur.leaseExpires < earliest {
			earliest = cur.leaseExpires
		}
		renewed++
		return nil
	})
	if err != nil {
		batch.Close()
		b.mu.Unlock()
		writeError(w, http.StatusInternalServerError, "renew failed: "+err.Error())
		return
	}
	tail := b.apply(batch, nil)
	b.mu.Unlock()
	if err := tail.wait(); err != nil {
		writeError(w, http.StatusInternalServerError, "renew failed: "+err.Error())
		return
	}
	out := []byte(`{"leaseId":`)
	out = jsontext.AppendString(out, leaseID)
	out = append(out, `,"success":`...)
	out = strconv.AppendBool(out, renewed > 0)
	out = append(out, `,"renewed":`...)
	out = strconv.AppendInt(out, int64(renewed), 10)
	ts := []byte("null")
	if renewed > 0 {
		ts = jsontext.AppendString(nil, time.UnixMicro(earliest).UTC().Format(tsMicros))
	}
	for _, name := range []string{"newExpiresAt", "expiresAt", "lease_expires_at"} {
		out = append(out, `,"`+name+`":`...)
		out = append(out, ts...)
	}
	writeBody(w, http.StatusOK, append(out, '}'))
}
