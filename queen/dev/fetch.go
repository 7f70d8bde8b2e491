package dev

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/queen-mq/queen-kafka/internal/jsontext"
	"github.com/queen-mq/queen-kafka/queen"
)

// Fetch limits of §6.
const (
	maxFetchEntries    = 1024
	defaultEntryBytes  = 1 << 20
	maxEntryBytes      = 8 << 20
	callBudgetBytes    = 64 << 20
	maxRecordsPerEntry = 10000
	maxFetchWait       = 30 * time.Second
	recheckInterval    = 200 * time.Millisecond
	// renderOverhead approximates the JSON around one record (offset,
	// transactionId, ts, punctuation), for the rendered-body cap.
	renderOverhead = 96
)

type rawFetchEntry struct {
	Queue     *string         `json:"queue"`
	Partition json.RawMessage `json:"partition"`
	Offset    *int64          `json:"offset"`
	MaxBytes  *int64          `json:"maxBytes"`
}

type fetchEntry struct {
	queue, part string
	offset      int64
	maxBytes    int64
}

type fetchRequest struct {
	entries  []fetchEntry
	maxWait  time.Duration
	minBytes int64
}

// decodeFetch validates the whole batch; any bad entry refuses all of it.
// The body is the caller's own (the entries may alias it).
func decodeFetch(body []byte) (*fetchRequest, error) {
	raw, ok := scanFetchBody(body)
	if !ok {
		raw = rawFetchBody{}
		if err := json.Unmarshal(body, &raw); err != nil {
			return nil, err
		}
	}
	if raw.Entries == nil {
		return nil, fmt.Errorf("entries is required")
	}
	if len(*raw.Entries) > maxFetchEntries {
		return nil, fmt.Errorf("%d entries, at most %d per call", len(*raw.Entries), maxFetchEntries)
	}
	req := &fetchRequest{entries: make([]fetchEntry, len(*raw.Entries)), minBytes: 1}
	if raw.MaxWaitMs != nil && *raw.MaxWaitMs > 0 {
		req.maxWait = time.Duration(min(*raw.MaxWaitMs, maxFetchWait.Milliseconds())) * time.Millisecond
	}
	if raw.MinBytes != nil {
		req.minBytes = max(*raw.MinBytes, 0)
	}
	for i, re := range *raw.Entries {
		e := &req.entries[i]
		if re.Queue == nil {
			return nil, fmt.Errorf("entry %d: queue is required", i)
		}
		e.queue = *re.Queue
		part, err := fetchPartition(re.Partition)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		e.part = part
		if re.Offset == nil {
			return nil, fmt.Errorf("entry %d: offset is required", i)
		}
		if *re.Offset < 0 {
			return nil, fmt.Errorf("entry %d: offset %d is negative", i, *re.Offset)
		}
		e.offset = *re.Offset
		e.maxBytes = defaultEntryBytes
		if re.MaxBytes != nil {
			e.maxBytes = min(max(*re.MaxBytes, 1), maxEntryBytes)
		}
	}
	return req, nil
}

// fetchPartition resolves an entry's partition: absent/null → Default, a
// string as is, a JSON integer as its decimal text.
func fetchPartition(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return DefaultPartition, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("partition: %w", err)
		}
		return s, nil
	}
	digits := raw
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 {
		return "", fmt.Errorf("partition must be a string or an integer")
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return "", fmt.Errorf("partition must be a string or an integer")
		}
	}
	return string(raw), nil
}

// fetchSlot is one entry's view of its partition, taken under b.mu.
type fetchSlot struct {
	qid      string
	first    int64
	hwm, lso int64
	err      string
}

type fetchEval struct {
	slots    []fetchSlot
	anyErr   bool
	readable bool             // some entry has records at or past its offset
	it       *pebble.Iterator // the store as of the slots' metadata; nil if !readable
	tail     *pending
}

// evalFetch reads every entry's partition metadata under b.mu and opens an
// iterator on the records as they are at that instant (records are
// rendered from it outside the lock). When w is not nil it is registered on
// every named partition (or on the queue, for a partition not written yet)
// so that a write wakes it.
func (b *Broker) evalFetch(tenantName string, req *fetchRequest, w *waiter) (*fetchEval, error) {
	t := b.st.tenant(tenantName)
	ev := &fetchEval{slots: make([]fetchSlot, len(req.entries))}
	for i := range req.entries {
		e := &req.entries[i]
		s := &ev.slots[i]
		q := t.queues[e.queue]
		if q == nil {
			s.err = queen.FetchErrUnknownTopic
			ev.anyErr = true
			continue
		}
		p := q.parts[e.part]
		if p == nil {
			if w != nil {
				ws := q.waiters[e.part]
				if ws == nil {
					ws = map[*waiter]struct{}{}
					q.waiters[e.part] = ws
				}
				ws[w] = struct{}{}
			}
			if e.offset > 0 {
				s.err = queen.FetchErrOutOfRange
				ev.anyErr = true
			}
			continue
		}
		if w != nil {
			p.waiters[w] = struct{}{}
		}
		s.hwm, s.lso = p.hwm, p.lso
		if e.offset < s.lso || e.offset > s.hwm {
			s.err = queen.FetchErrOutOfRange
			ev.anyErr = true
			continue
		}
		s.qid, s.first = q.id, e.offset
		if s.first < s.hwm {
			ev.readable = true
		}
	}
	ev.tail = b.observed()
	if ev.readable && ev.tail.err == nil {
		it, err := b.db.NewIter(&pebble.IterOptions{LowerBound: []byte{kindBatch}, UpperBound: []byte{kindBatch + 1}})
		if err != nil {
			return nil, err
		}
		ev.it = it
	}
	return ev, nil
}

func (ev *fetchEval) close() {
	if ev.it != nil {
		ev.it.Close()
		ev.it = nil
	}
}

// handleFetch answers §6, parking until data, maxWaitMs or shutdown.
func (b *Broker) handleFetch(w http.ResponseWriter, r *http.Request, c *call) {
	req, err := decodeFetch(c.body)
	if err != nil {
		badBody(w, err.Error())
		return
	}
	if len(req.entries) == 0 {
		writeBody(w, http.StatusOK, []byte(`{"entries":[]}`))
		return
	}
	var wt *waiter
	if req.maxWait > 0 && req.minBytes > 0 {
		wt = newWaiter()
	}
	deadline := time.Now().Add(req.maxWait)
	var pk parking
	defer pk.stop()
	bp := renderPool.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= 16<<20 {
			renderPool.Put(bp)
		}
	}()
	for {
		out, delivered, anyErr, err := b.readFetch((*bp)[:0], c.tenant, req, wt)
		*bp = out
		if err != nil {
			if wt != nil {
				b.unpark(c.tenant, req, wt)
			}
			writeError(w, http.StatusInternalServerError, "fetch failed: "+err.Error())
			return
		}
		left := time.Until(deadline)
		if wt == nil || anyErr || delivered >= req.minBytes || left <= 0 || b.draining() {
			if wt != nil {
				b.unpark(c.tenant, req, wt)
			}
			writeBody(w, http.StatusOK, out)
			return
		}
		if !pk.wait(r.Context(), wt, left, b.closing) {
			b.unpark(c.tenant, req, wt)
			return
		}
	}
}

// readFetch evaluates the call once and renders its answer into out, after
// everything it shows is durable.
func (b *Broker) readFetch(out []byte, tenantName string, req *fetchRequest, wt *waiter) ([]byte, int64, bool, error) {
	if !b.enter() {
		return out, 0, false, errClosed
	}
	defer b.leave()
	b.mu.Lock()
	ev, err := b.evalFetch(tenantName, req, wt)
	b.mu.Unlock()
	if err != nil {
		return out, 0, false, err
	}
	defer ev.close()
	if ev.tail.err != nil {
		return out, 0, false, ev.tail.err
	}
	out, delivered, err := renderFetch(out, req, ev)
	if err != nil {
		return out, 0, false, err
	}
	if err := ev.tail.wait(); err != nil {
		return out, 0, false, err
	}
	return out, delivered, ev.anyErr, nil
}

// unpark removes w from every set evalFetch may have put it in.
func (b *Broker) unpark(tenantName string, req *fetchRequest, w *waiter) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.st.tenant(tenantName)
	for i := range req.entries {
		if q := t.queues[req.entries[i].queue]; q != nil {
			if ws := q.waiters[req.entries[i].part]; ws != nil {
				delete(ws, w)
				if len(ws) == 0 {
					delete(q.waiters, req.entries[i].part)
				}
			}
			if p := q.parts[req.entries[i].part]; p != nil {
				delete(p.waiters, w)
			}
		}
	}
}

func (b *Broker) draining() bool {
	select {
	case <-b.closing:
		return true
	default:
		return false
	}
}

// renderPool recycles fetch bodies: they are large, and a fresh one would
// be zeroed by the allocator only to be overwritten.
var renderPool = sync.Pool{New: func() any { return new([]byte) }}

// renderFetch appends the fetch answer to out, reading each entry's records
// from ev's iterator within the call's budgets: the first record of the
// call always, then records while the entry's maxBytes, the 64 MiB payload
// budget and the rendered-body cap allow, at most maxRecordsPerEntry per
// entry. delivered is the payload bytes shown (at least 1 per record).
func renderFetch(out []byte, req *fetchRequest, ev *fetchEval) ([]byte, int64, error) {
	out = append(out, `{"entries":[`...)
	var lastTS int64 = -1
	var tsText string
	var used, rendered, delivered int64
	firstOfCall := true
	var ri *recordIter
	if ev.it != nil {
		ri = iterOn(ev.it)
	}
	for i := range ev.slots {
		s, e := &ev.slots[i], &req.entries[i]
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"queue":`...)
		out = jsontext.AppendString(out, e.queue)
		out = append(out, `,"partition":`...)
		out = jsontext.AppendString(out, e.part)
		out = append(out, `,"records":[`...)
		if s.err == "" && s.first < s.hwm {
			var n, entryBytes int64
			ri.seek(s.qid, e.part, s.first, s.hwm)
			for off, r, ok := ri.next(); ok && n < maxRecordsPerEntry; off, r, ok = ri.next() {
				sz := int64(len(r.payload))
				rs := sz + int64(len(r.msgID)+len(r.txID)) + renderOverhead
				if !firstOfCall && (entryBytes+sz > e.maxBytes || used+sz > callBudgetBytes || rendered+rs > callBudgetBytes) {
					break
				}
				firstOfCall = false
				entryBytes += sz
				used += sz
				rendered += rs
				delivered += max(sz, 1)
				if n > 0 {
					out = append(out, ',')
				}
				n++
				out = append(out, `{"offset":`...)
				out = strconv.AppendInt(out, off, 10)
				out = append(out, `,"transactionId":`...)
				out = jsontext.AppendString(out, string(r.transactionID()))
				out = append(out, `,"payload":`...)
				if len(r.payload) == 0 {
					out = append(out, "null"...)
				} else {
					out = append(out, r.payload...)
				}
				if r.ts != lastTS {
					lastTS, tsText = r.ts, queen.FormatTS(time.UnixMicro(r.ts))
				}
				out = append(out, `,"ts":"`...)
				out = append(out, tsText...)
				out = append(out, `"}`...)
			}
			if err := ri.err(); err != nil {
				return out, 0, fmt.Errorf("%s/%s: %w", e.queue, e.part, err)
			}
		}
		out = append(out, `],"highWatermark":`...)
		out = strconv.AppendInt(out, s.hwm, 10)
		out = append(out, `,"logStartOffset":`...)
		out = strconv.AppendInt(out, s.lso, 10)
		if s.err != "" {
			out = append(out, `,"error":"`...)
			out = append(out, s.err...)
			out = append(out, '"')
		}
		out = append(out, '}')
	}
	return append(out, "]}"...), delivered, nil
}
