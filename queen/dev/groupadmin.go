package dev

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// Consumer-group delete and seek (queen-api-consume.md §6). Both move only
// pop cursors (kind c) and the lease index rows (kind l) that point at
// them; a Kafka group's position is the facade's KV row and is never
// written here.

// dropCursor deletes a cursor and its lease index row, if any.
func dropCursor(batch *pebble.Batch, qid, part, group string, cur *cursor) {
	if cur.leaseID != "" {
		batch.Delete(keyLease(cur.leaseID, qid, part, group), nil)
	}
	batch.Delete(keyCursor(qid, part, group), nil)
}

// handleDeleteGroup serves DELETE /api/v1/consumer-groups/{group} and its
// per-queue form: the group's cursors go, so its next pop seeds them again
// (first contact), and with deleteMetadata (the default) its stored
// subscriptions too; kept, they seed those cursors again.
func (b *Broker) handleDeleteGroup(w http.ResponseWriter, r *http.Request, c *call) {
	group, queueName := r.PathValue("group"), r.PathValue("queue")
	meta := r.URL.Query().Get("deleteMetadata")
	deleteMetadata := meta != "false" && meta != "0"
	if !b.enter() {
		writeError(w, http.StatusInternalServerError, "delete failed: "+errClosed.Error())
		return
	}
	defer b.leave()
	b.mu.Lock()
	batch := b.db.NewBatch()
	deleted := 0
	var err error
	for _, q := range b.st.tenant(c.tenant).queues {
		if queueName != "" && q.name != queueName {
			continue
		}
		if deleteMetadata {
			batch.Delete(keySub(q.id, group), nil) // the subscription goes too: the next pop registers afresh
		}
		prefix := queuePrefix(kindCursor, q.id)
		err = b.scan(prefix, func(k, v []byte) error {
			part, rest, err := readLP(k[len(prefix):])
			if err != nil || string(rest) != group {
				return err
			}
			cur, err := decodeCursor(v)
			if err != nil {
				return err
			}
			dropCursor(batch, q.id, part, group, cur)
			deleted++
			return nil
		})
		if err != nil {
			break
		}
	}
	if err := b.applyUnlock(batch, err); err != nil {
		writeError(w, http.StatusInternalServerError, "delete failed: "+err.Error())
		return
	}
	out := map[string]any{"success": true, "consumerGroup": group, "deletedPartitions": deleted, "metadataDeleted": deleteMetadata}
	if queueName != "" {
		out["queueName"] = queueName
	}
	writeJSON(w, http.StatusOK, out)
}

// handleSeek serves POST …/{group}/queues/{queue}/seek and its
// partitions/{partition} form: {"toEnd":true} puts the cursor after the
// last record, {"timestamp":ISO} before the first record stored at or
// after it (after the last when none is). A seek releases any lease and
// resets the retry budget; it creates the cursor if absent.
func (b *Broker) handleSeek(w http.ResponseWriter, r *http.Request, c *call) {
	group, queueName, partName := r.PathValue("group"), r.PathValue("queue"), r.PathValue("partition")
	onePart := partName != ""
	var body struct {
		ToEnd     *bool   `json:"toEnd"`
		Timestamp *string `json:"timestamp"`
	}
	toEnd := onePart && len(bytes.TrimSpace(c.body)) == 0 // the partition form's empty body
	var ts *time.Time
	if !toEnd {
		if json.Unmarshal(c.body, &body) != nil {
			writeError(w, http.StatusBadRequest, "bad body")
			return
		}
		switch {
		case body.ToEnd != nil && *body.ToEnd:
			toEnd = true
		case body.Timestamp != nil && *body.Timestamp != "":
			t, err := time.Parse(time.RFC3339Nano, *body.Timestamp)
			if err != nil {
				writeError(w, http.StatusInternalServerError, "seek failed: invalid timestamp "+*body.Timestamp)
				return
			}
			ts = &t
		default:
			writeError(w, http.StatusBadRequest, "Must specify toEnd=true or a timestamp")
			return
		}
	}
	if !b.enter() {
		writeError(w, http.StatusInternalServerError, "seek failed: "+errClosed.Error())
		return
	}
	defer b.leave()
	b.mu.Lock()
	q := b.st.tenant(c.tenant).queues[queueName]
	var parts []*partition
	if q != nil {
		for n, p := range q.parts {
			if !onePart || n == partName {
				parts = append(parts, p)
			}
		}
	}
	batch := b.db.NewBatch()
	var err error
	for _, p := range parts {
		if err = b.seekOne(batch, q, p, group, ts); err != nil {
			break
		}
	}
	if err := b.applyUnlock(batch, err); err != nil {
		writeError(w, http.StatusInternalServerError, "seek failed: "+err.Error())
		return
	}
	var target any
	if ts != nil {
		target = ts.UTC().Format("2006-01-02T15:04:05.000Z")
	}
	switch {
	case onePart && len(parts) == 0:
		writeJSON(w, http.StatusNotFound, map[string]any{"success": false, "error": "Partition not found"})
	case len(parts) == 0:
		writeJSON(w, http.StatusNotFound, map[string]any{"success": false, "error": "Queue not found or has no partitions",
			"consumerGroup": group, "queueName": queueName, "partitionsUpdated": 0})
	case onePart:
		writeJSON(w, http.StatusOK, map[string]any{"success": true, "consumerGroup": group, "queueName": queueName,
			"partitionName": partName, "seekToEnd": toEnd, "targetTimestamp": target, "updated": true})
	default:
		writeJSON(w, http.StatusOK, map[string]any{"success": true, "consumerGroup": group, "queueName": queueName,
			"seekToEnd": toEnd, "targetTimestamp": target, "partitionsUpdated": len(parts)})
	}
}

// seekOne positions one cursor: after the last record (ts nil) or just
// before the first record stored at or after ts.
func (b *Broker) seekOne(batch *pebble.Batch, q *queue, p *partition, group string, ts *time.Time) error {
	cur, err := b.getCursor(q.id, p.name, group)
	if err != nil {
		return err
	}
	if cur == nil {
		cur = &cursor{}
	} else if cur.leaseID != "" {
		batch.Delete(keyLease(cur.leaseID, q.id, p.name, group), nil)
	}
	cur.committed = p.hwm - 1
	if ts != nil {
		if cur.committed, err = b.firstAtOrAfter(q.id, p, ts.UnixMicro()); err != nil {
			return err
		}
	}
	cur.leaseID, cur.leaseExpires, cur.batchEnd, cur.retries = "", 0, cur.committed, 0
	batch.Set(keyCursor(q.id, p.name, group), encodeCursor(cur), nil)
	return nil
}
