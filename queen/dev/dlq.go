package dev

import (
	"bytes"
	"crypto/sha1"
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// The dead-letter queue (queen-api-consume.md §5): ack files a row (kind z)
// per (partition, group, offset); these routes list, purge and replay them.
// A row is a snapshot (the message's ids, time and payload), so reading the
// DLQ never reads the record keyspace, and a replay is a push of the
// snapshot plus the row's deletion in one batch.

// dlqRow is one dead letter as stored. The value is
// str(reason) varint(retries) varint(failedAt) varint(ts) str(msgID)
// str(txID) payload.
type dlqRow struct {
	qid, part, group string
	offset           int64
	reason           string
	retries          int64
	failedAt         int64 // unix µs
	ts               int64 // the record's commit time, unix µs
	msgID, txID      string
	payload          []byte
}

func encodeDLQ(rec recordView, reason string, retries, failedAt int64) []byte {
	e := encoder{b: make([]byte, 0, 48+len(rec.msgID)+len(rec.txID)+len(rec.payload)+len(reason))}
	e.str(reason)
	e.varint(retries)
	e.varint(failedAt)
	e.varint(rec.ts)
	e.str(string(rec.msgID))
	e.str(string(rec.txID))
	return append(e.b, rec.payload...)
}

// decodeDLQ copies: the row outlives the engine's buffer.
func decodeDLQ(k, v []byte) (*dlqRow, error) {
	qid, rest, err := readLP(k[1:])
	if err != nil {
		return nil, err
	}
	part, rest, err := readLP(rest)
	if err != nil {
		return nil, err
	}
	group, rest, err := readLP(rest)
	if err != nil || len(rest) != 8 {
		return nil, errShort
	}
	d := &decoder{b: v}
	r := &dlqRow{qid: qid, part: part, group: group, offset: offsetOf(k)}
	r.reason, r.retries, r.failedAt, r.ts = d.str(), d.varint(), d.varint(), d.varint()
	r.msgID, r.txID = d.str(), d.str()
	r.payload = append([]byte(nil), d.b...)
	return r, d.err
}

// transactionID is the address the row's message had (its message id when
// it was pushed without one).
func (r *dlqRow) transactionID() string {
	if r.txID != "" {
		return r.txID
	}
	return r.msgID
}

// id is the row's id: a name-based UUID of its key, so it needs no
// storage and a row filed again after a replay gets the same one.
func (r *dlqRow) id() string {
	return nameUUID(r.qid + "\x00" + r.part + "\x00" + r.group + "\x00" + strconv.FormatInt(r.offset, 10))
}

func nameUUID(name string) string {
	sum := sha1.Sum([]byte(name))
	var u [16]byte
	copy(u[:], sum[:16])
	u[6] = u[6]&0x0f | 0x50 // version 5 (name-based)
	u[8] = u[8]&0x3f | 0x80
	return formatUUID(u)
}

// dlqRows reads the dead letters of q that keep returns true for. The
// caller holds b.mu.
func (b *Broker) dlqRows(q *queue, keep func(*dlqRow) bool) ([]*dlqRow, error) {
	var rows []*dlqRow
	err := b.scan(queuePrefix(kindDLQ, q.id), func(k, v []byte) error {
		r, err := decodeDLQ(k, v)
		if err != nil {
			return err
		}
		if keep(r) {
			rows = append(rows, r)
		}
		return nil
	})
	return rows, err
}

// newestFirst orders rows by failure time, newest first (then by id, so
// that a page is stable).
func newestFirst(rows []*dlqRow) {
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].failedAt != rows[j].failedAt {
			return rows[i].failedAt > rows[j].failedAt
		}
		return rows[i].id() < rows[j].id()
	})
}

func qint(r *http.Request, name string, def int) int {
	if n, err := strconv.Atoi(r.URL.Query().Get(name)); err == nil {
		return n
	}
	return def
}

func msTime(us int64) string { return time.UnixMicro(us).UTC().Format("2006-01-02T15:04:05.000Z") }

// handleDLQ lists the tenant's dead letters, newest first: ?queue= and
// ?consumerGroup= narrow it, limit (100) and offset (0) page it; total is
// the page's length, as Queen answers it.
func (b *Broker) handleDLQ(w http.ResponseWriter, r *http.Request, c *call) {
	qs := r.URL.Query()
	queueName, group := qs.Get("queue"), qs.Get("consumerGroup")
	limit, offset := max(qint(r, "limit", 100), 0), max(qint(r, "offset", 0), 0)
	if !b.enter() {
		writeError(w, http.StatusInternalServerError, "dlq failed: "+errClosed.Error())
		return
	}
	defer b.leave()
	b.mu.Lock()
	var rows []*dlqRow
	names := map[string]string{}
	var err error
	for _, q := range b.st.tenant(c.tenant).queues {
		if queueName != "" && q.name != queueName {
			continue
		}
		names[q.id] = q.name
		var got []*dlqRow
		if got, err = b.dlqRows(q, func(d *dlqRow) bool { return group == "" || d.group == group }); err != nil {
			break
		}
		rows = append(rows, got...)
	}
	if err := b.applyUnlock(nil, err); err != nil {
		writeError(w, http.StatusInternalServerError, "dlq failed: "+err.Error())
		return
	}
	newestFirst(rows)
	rows = rows[min(offset, len(rows)):]
	rows = rows[:min(limit, len(rows))]
	msgs := make([]map[string]any, len(rows))
	for i, d := range rows {
		var data any = json.RawMessage("null")
		if len(d.payload) > 0 {
			data = json.RawMessage(d.payload)
		}
		msgs[i] = map[string]any{
			"id": d.id(), "transactionId": d.transactionID(), "partitionId": partitionID(d.qid, d.part),
			"queue": names[d.qid], "partition": d.part, "consumerGroup": d.group, "errorMessage": d.reason,
			"retryCount": d.retries, "data": data, "producerSub": nil,
			"createdAt": msTime(d.failedAt), "failedAt": msTime(d.failedAt),
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"messages": msgs, "pagination": map[string]int{"limit": limit, "offset": offset}, "total": len(msgs),
	})
}

// handlePurgeDLQ deletes the dead letters of one queue (required, so that
// a forgotten parameter never empties a tenant's DLQ), optionally of one
// group.
func (b *Broker) handlePurgeDLQ(w http.ResponseWriter, r *http.Request, c *call) {
	qs := r.URL.Query()
	queueName, group := qs.Get("queue"), qs.Get("consumerGroup")
	if queueName == "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"success": false, "error": "queue is required", "message": "Bulk DLQ purge requires an exact queue name"})
		return
	}
	if !b.enter() {
		writeError(w, http.StatusInternalServerError, "bulk dlq purge failed: "+errClosed.Error())
		return
	}
	defer b.leave()
	b.mu.Lock()
	var rows []*dlqRow
	var err error
	var batch *pebble.Batch
	if q := b.st.tenant(c.tenant).queues[queueName]; q != nil {
		rows, err = b.dlqRows(q, func(d *dlqRow) bool { return group == "" || d.group == group })
		if err == nil && len(rows) > 0 {
			batch = b.db.NewBatch()
			for _, d := range rows {
				batch.Delete(keyDLQ(d.qid, d.part, d.group, d.offset), nil)
			}
		}
	}
	var tail *pending
	if err == nil {
		tail = b.apply(batch, nil)
	}
	b.mu.Unlock()
	if err == nil {
		err = tail.wait()
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, "bulk dlq purge failed: "+err.Error())
		return
	}
	var g any
	if group != "" {
		g = group
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "deleted": len(rows), "queue": queueName, "consumerGroup": g})
}

// handleDLQReplay moves the row named by its id back into the log: to its
// own queue and partition, or to those the optional body names.
func (b *Broker) handleDLQReplay(w http.ResponseWriter, r *http.Request, c *call) {
	id := r.PathValue("id")
	var dest struct {
		Queue     *string `json:"queue"`
		Partition *string `json:"partition"`
	}
	if len(bytes.TrimSpace(c.body)) > 0 {
		bad := json.Unmarshal(c.body, &dest) != nil || bytes.Equal(bytes.TrimSpace(c.body), []byte("null"))
		msg := `bad body: expected {} or {"queue":"...","partition":"..."}`
		for _, f := range []struct {
			v    **string
			name string
		}{{&dest.Queue, "queue"}, {&dest.Partition, "partition"}} {
			if !bad && *f.v != nil {
				s := strings.TrimSpace(**f.v)
				if s == "" {
					bad, msg = true, f.name+" override must be a non-empty name"
				}
				*f.v = &s
			}
		}
		if bad {
			writeJSON(w, http.StatusBadRequest, map[string]any{"success": false, "error": msg,
				"message": "The replay body is optional; when present it may name a queue and/or a partition to move the message to"})
			return
		}
	}
	find := func(t *tenant) (*dlqRow, string, error) {
		for _, q := range t.queues {
			rows, err := b.dlqRows(q, func(d *dlqRow) bool { return d.id() == id })
			if err != nil || len(rows) > 0 {
				if len(rows) == 0 {
					return nil, "", err
				}
				return rows[0], q.name, err
			}
		}
		return nil, "", nil
	}
	gone := map[string]any{"success": false, "result": "gone", "dlqId": id, "error": "Message not found",
		"message": "No dead-letter row with this id — it was already replayed or purged"}
	b.moveDLQ(w, c.tenant, find, dest.Queue, dest.Partition, gone)
}

// handleRetryMessage replays, in place, the newest dead letter of the
// address (partitionId, transactionId) — one group's row, the others stay.
func (b *Broker) handleRetryMessage(w http.ResponseWriter, r *http.Request, c *call) {
	pid, txID := r.PathValue("partitionId"), r.PathValue("transactionId")
	find := func(t *tenant) (*dlqRow, string, error) {
		for _, q := range t.queues {
			for n := range q.parts {
				if partitionID(q.id, n) != pid {
					continue
				}
				rows, err := b.dlqRows(q, func(d *dlqRow) bool { return d.part == n && d.transactionID() == txID })
				if err != nil || len(rows) == 0 {
					return nil, "", err
				}
				newestFirst(rows)
				return rows[0], q.name, nil
			}
		}
		return nil, "", nil
	}
	notFound := map[string]any{"success": false, "partitionId": pid, "transactionId": txID, "error": "Message not found",
		"message": "No dead-letter row for this address. Only dead-lettered messages can be replayed"}
	b.moveDLQ(w, c.tenant, find, nil, nil, notFound)
}

// moveDLQ pushes the row find returns as a new message whose transactionId
// is "dlq:<row id>" and deletes the row, in one batch. If that id is
// still in the destination's dedup window the push is a duplicate:
// nothing is written and the row stays.
func (b *Broker) moveDLQ(w http.ResponseWriter, tenantName string, find func(*tenant) (*dlqRow, string, error),
	toQueue, toPart *string, notFound map[string]any) {
	if !b.enter() {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"success": false, "error": "dlq move failed: " + errClosed.Error(), "dlqRowRemoved": false})
		return
	}
	defer b.leave()
	b.mu.Lock()
	row, queueName, err := find(b.st.tenant(tenantName))
	var plan *pushPlan
	var tail *pending
	var item pushItem
	if err == nil && row != nil {
		item = pushItem{queue: queueName, part: row.part, txID: "dlq:" + row.id(), payload: row.payload}
		if toQueue != nil {
			item.queue = *toQueue
		}
		if toPart != nil {
			item.part = *toPart
		}
		plan, err = b.planPush(tenantName, []pushItem{item}, b.now(), b.db, nil)
		if err == nil {
			if plan.windowDup >= 0 {
				tail = b.observed()
			} else {
				batch := b.db.NewBatch()
				after := plan.write(batch, b.st)
				batch.Delete(keyDLQ(row.qid, row.part, row.group, row.offset), nil)
				tail = b.apply(batch, after)
			}
		}
	} else if err == nil {
		tail = b.observed()
	}
	b.mu.Unlock()
	if err == nil {
		err = tail.wait()
	}
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"success": false, "error": "dlq move failed: " + err.Error(), "dlqRowRemoved": false,
			"message": "Nothing was replayed — the dead-letter row is untouched"})
		return
	}
	if row == nil {
		writeJSON(w, http.StatusNotFound, notFound)
		return
	}
	moved := plan.windowDup < 0
	o := plan.out[0]
	result, status, msgID := "moved", "queued", o.msgID
	if !moved {
		result, status, msgID = "duplicate", "duplicate", "00000000-0000-0000-0000-000000000000"
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"success": true, "result": result, "queue": item.queue, "partition": item.part, "consumerGroup": row.group,
		"dlqId": row.id(), "originalTransactionId": row.transactionID(),
		"replayedAs": map[string]any{"index": 0, "message_id": msgID, "transaction_id": item.txID, "queueName": item.queue,
			"status": status, "offset": o.offset},
		"dlqRowRemoved": moved,
	})
}
