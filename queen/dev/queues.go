package dev

import (
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/queen-mq/queen-kafka/internal/jsontext"
)

// handleQueues answers §2 with live partition counts.
func (b *Broker) handleQueues(w http.ResponseWriter, r *http.Request, c *call) {
	if !b.enter() {
		writeError(w, http.StatusInternalServerError, "list failed: "+errClosed.Error())
		return
	}
	defer b.leave()
	b.mu.Lock()
	t := b.st.tenant(c.tenant)
	names := make([]string, 0, len(t.queues))
	for n := range t.queues {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]byte, 0, 64+len(names)*256)
	out = append(out, `{"queues":[`...)
	for i, n := range names {
		q := t.queues[n]
		parts, msgs, bytes := 0, int64(0), int64(0)
		for _, p := range q.parts {
			if p.hwm > 0 {
				parts++
			}
			msgs += p.hwm - p.lso
			bytes += p.bytes
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"id":`...)
		out = jsontext.AppendString(out, q.id)
		out = append(out, `,"name":`...)
		out = jsontext.AppendString(out, q.name)
		out = append(out, `,"namespace":`...)
		out = jsontext.AppendString(out, q.opts[optNamespace].str)
		out = append(out, `,"task":`...)
		out = jsontext.AppendString(out, q.opts[optTask].str)
		out = append(out, `,"createdAt":`...)
		out = jsontext.AppendString(out, time.UnixMilli(q.created).UTC().Format("2006-01-02T15:04:05.000Z"))
		out = append(out, `,"partitions":`...)
		out = strconv.AppendInt(out, int64(parts), 10)
		out = append(out, `,"retainedBytes":`...)
		out = strconv.AppendInt(out, bytes, 10)
		out = append(out, `,"segments":{"segments":`...)
		out = strconv.AppendInt(out, int64(parts), 10)
		out = append(out, `,"messages":`...)
		out = strconv.AppendInt(out, msgs, 10)
		out = append(out, `},"messages":{"total":`...)
		out = strconv.AppendInt(out, msgs, 10)
		out = append(out, `,"pending":`...)
		out = strconv.AppendInt(out, msgs, 10)
		out = append(out, `,"processing":0}}`...)
	}
	tail := b.observed()
	b.mu.Unlock()
	out = append(out, "]}"...)
	if err := tail.wait(); err != nil {
		writeError(w, http.StatusInternalServerError, "list failed: "+err.Error())
		return
	}
	writeBody(w, http.StatusOK, out)
}

// handleConfigure creates a queue or changes its options (§3): merge by
// default (absent = keep, null = default, value = set), or replace.
func (b *Broker) handleConfigure(w http.ResponseWriter, r *http.Request, c *call) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(c.body, &top); err != nil || top == nil {
		badBody(w, "want a JSON object")
		return
	}
	rawQueue, ok := top["queue"]
	if !ok || isNull(rawQueue) {
		writeError(w, http.StatusBadRequest, "queue is required")
		return
	}
	var name string
	if err := json.Unmarshal(rawQueue, &name); err != nil {
		badBody(w, "queue must be a string")
		return
	}
	if hasControl(name) {
		badBody(w, "control characters in queue name")
		return
	}
	replace := false
	if rawMode, ok := top["mode"]; ok && !isNull(rawMode) {
		var mode string
		if json.Unmarshal(rawMode, &mode) != nil || (mode != "merge" && mode != "replace") {
			writeError(w, http.StatusBadRequest, `mode must be "merge" or "replace", got `+string(rawMode))
			return
		}
		replace = mode == "replace"
	}
	bag := top
	if rawOpts, ok := top["options"]; ok && !isNull(rawOpts) {
		bag = nil // a fresh map: Unmarshal into top would merge the two
		if err := json.Unmarshal(rawOpts, &bag); err != nil || bag == nil {
			badBody(w, "options must be an object")
			return
		}
		// A non-empty top-level namespace/task is folded into a bag that
		// lacks it.
		for _, k := range []string{"namespace", "task"} {
			if _, has := bag[k]; has {
				continue
			}
			var s string
			if v, ok := top[k]; ok && json.Unmarshal(v, &s) == nil && s != "" {
				bag[k] = v
			}
		}
	}
	changes, err := parseOptionChanges(bag)
	if err != nil {
		oe := err.(*optionError)
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": oe.Error(), "invalid": oe.name})
		return
	}

	if !b.enter() {
		writeError(w, http.StatusInternalServerError, "configure failed: "+errClosed.Error())
		return
	}
	defer b.leave()
	b.mu.Lock()
	t := b.st.tenant(c.tenant)
	q := t.queues[name]
	var set queue
	if q == nil {
		set = queue{name: name, id: newUUID(), created: b.now().UnixMilli(), opts: defaultOptions()}
	} else {
		set = queue{name: name, id: q.id, created: q.created, opts: q.opts}
		if replace {
			set.opts = defaultOptions()
		}
	}
	for i, v := range changes {
		set.opts[i] = v
	}
	batch := b.db.NewBatch()
	batch.Set(keyQueue(c.tenant, name), encodeQueue(set.id, set.created, &set.opts), nil)
	pd := b.apply(batch, func() {
		if q == nil {
			t.queues[name] = newQueue(name, set.id, set.created, set.opts)
		} else {
			q.opts = set.opts
		}
		b.st.mutations++
	})
	b.mu.Unlock()
	if err := pd.wait(); err != nil {
		writeError(w, http.StatusInternalServerError, "configure failed: "+err.Error())
		return
	}
	out := make([]byte, 0, 768)
	out = append(out, `{"configured":true,"queue":`...)
	out = jsontext.AppendString(out, name)
	out = append(out, `,"namespace":`...)
	out = jsontext.AppendString(out, set.opts[optNamespace].str)
	out = append(out, `,"task":`...)
	out = jsontext.AppendString(out, set.opts[optTask].str)
	out = append(out, `,"options":`...)
	out = set.opts.appendEcho(out)
	out = append(out, '}')
	writeBody(w, http.StatusOK, out)
}

// handleDelete removes a queue and all its records (§4); KV is untouched.
func (b *Broker) handleDelete(w http.ResponseWriter, r *http.Request, c *call) {
	name := r.PathValue("queue")
	if !b.enter() {
		writeError(w, http.StatusInternalServerError, "delete failed: "+errClosed.Error())
		return
	}
	defer b.leave()
	b.mu.Lock()
	t := b.st.tenant(c.tenant)
	q, existed := t.queues[name]
	var batch *pebble.Batch
	var err error
	if existed {
		batch = b.db.NewBatch()
		batch.Delete(keyQueue(c.tenant, name), nil)
		// Everything filed under the queue's id goes with it.
		// The lease index is keyed by lease first: its rows are found
		// through the cursors that hold them.
		prefix := queuePrefix(kindCursor, q.id)
		err = b.scan(prefix, func(k, v []byte) error {
			part, rest, err := readLP(k[len(prefix):])
			if err != nil {
				return err
			}
			cur, err := decodeCursor(v)
			if err == nil && cur.leaseID != "" {
				batch.Delete(keyLease(cur.leaseID, q.id, part, string(rest)), nil)
			}
			return err
		})
		for _, kind := range []byte{kindPart, kindBatch, kindDedup, kindDedupRun, kindBatchAge, kindCursor, kindDLQ, kindSub} {
			p := queuePrefix(kind, q.id)
			batch.DeleteRange(p, prefixEnd(p), nil)
		}
	}
	if err != nil {
		batch.Close()
		b.mu.Unlock()
		writeError(w, http.StatusInternalServerError, "delete failed: "+err.Error())
		return
	}
	pd := b.apply(batch, func() {
		delete(t.queues, name)
		dropQueueWaiters(q)
		b.st.mutations++
	})
	b.mu.Unlock()
	if err := pd.wait(); err != nil {
		writeError(w, http.StatusInternalServerError, "delete failed: "+err.Error())
		return
	}
	if !existed {
		writeBody(w, http.StatusOK, []byte(`{"deleted":false,"existed":false,"message":"Queue not found, nothing was deleted"}`))
		return
	}
	writeBody(w, http.StatusOK, []byte(`{"deleted":true,"existed":true}`))
}
