package dev

import (
	"errors"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/queen-mq/queen-kafka/internal/jsontext"
)

// Queen's native consumption (queen-api-consume.md §2–§4): pop leases a
// (partition, consumer group) cursor over a span of records, ack moves the
// cursor. A cursor is one row (kind c) under the queue id, written with the
// request's other changes in one batch and acknowledged after its fsync,
// like every other write; it is read from the store, never held in memory.

// Queue options pop and ack read (indexes into optSpecs).
const (
	optLeaseTime       = 3
	optRetryLimit      = 4
	optDeadLetterQueue = 8
	optDlqAfterRetries = 9
)

const (
	queueModeGroup    = "__QUEUE_MODE__"
	popDefaultBatch   = 200
	popMaxBatch       = 10000
	popMaxPartitions  = 64
	popDefaultTimeout = 30 * time.Second
	defaultLease      = 60 // seconds, when neither the call nor the queue names one
	tsMicros          = "2006-01-02T15:04:05.000000Z"
)

// cursor is one (partition, group) row: committed is the last offset done
// (-1 before any), a live lease covers (committed, batchEnd].
type cursor struct {
	committed    int64
	leaseID      string
	leaseExpires int64 // unix µs; 0 = none
	batchEnd     int64
	retries      int64 // failed nacks charged against retryLimit
	consumed     int64 // offsets ever committed past (0: the group never consumed here)
}

func (c *cursor) leased(now int64) bool { return c.leaseID != "" && c.leaseExpires > now }

func keyCursor(qid, part, group string) []byte {
	return append(keyPrefix(kindCursor, qid, part), group...)
}

func keyLease(lease, qid, part, group string) []byte {
	b := appendLP([]byte{kindLease}, lease)
	b = appendLP(b, qid)
	return append(appendLP(b, part), group...)
}

func keyDLQ(qid, part, group string, off int64) []byte {
	return appendOffset(appendLP(keyPrefix(kindDLQ, qid, part), group), off)
}

func encodeCursor(c *cursor) []byte {
	e := encoder{b: make([]byte, 0, 64)}
	e.varint(c.committed)
	e.str(c.leaseID)
	e.varint(c.leaseExpires)
	e.varint(c.batchEnd)
	e.varint(c.retries)
	e.varint(c.consumed)
	return e.b
}

func decodeCursor(v []byte) (*cursor, error) {
	d := &decoder{b: v}
	c := &cursor{committed: d.varint(), leaseID: d.str(), leaseExpires: d.varint(), batchEnd: d.varint(), retries: d.varint(), consumed: d.varint()}
	return c, d.err
}

// getCursor reads a cursor as applied so far (nil if absent).
func (b *Broker) getCursor(qid, part, group string) (*cursor, error) {
	v, closer, err := b.db.Get(keyCursor(qid, part, group))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	return decodeCursor(v)
}

// partitionID is the partition's uuid in pop and ack: derived from the
// queue id and the name, so it needs no storage and a recreated queue's
// partitions get new ones.
func partitionID(qid, part string) string { return nameUUID(qid + "\x00" + part) }

type popParams struct {
	group      string
	batch      int
	partitions int
	wait       bool
	timeout    time.Duration
	autoAck    bool
	leaseSecs  int64
	subNew     bool  // subscriptionMode new / subscriptionFrom now
	subFrom    int64 // subscriptionFrom timestamp, unix µs; 0 = none
	onePart    string
	hasOnePart bool
	queue      string
	// The discovery route: queues matching namespace and task (either
	// may be empty, not both).
	discover        bool
	namespace, task string
}

func parsePopParams(r *http.Request) (*popParams, string) {
	q := r.URL.Query()
	p := &popParams{group: queueModeGroup, batch: popDefaultBatch, partitions: 1, timeout: popDefaultTimeout}
	if g := q.Get("consumerGroup"); g != "" {
		p.group = g
	}
	intParam := func(name string, dst *int64) string {
		if s := q.Get(name); s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return name + " must be an integer"
			}
			*dst = n
		}
		return ""
	}
	var batch, parts, timeout, lease int64 = popDefaultBatch, 1, popDefaultTimeout.Milliseconds(), 0
	for name, dst := range map[string]*int64{"batch": &batch, "partitions": &parts, "timeout": &timeout, "leaseSeconds": &lease} {
		if msg := intParam(name, dst); msg != "" {
			return nil, msg
		}
	}
	p.batch = int(min(max(batch, 1), popMaxBatch))
	p.partitions = int(min(max(parts, 1), popMaxPartitions))
	p.timeout = time.Duration(min(max(timeout, 0), maxFetchWait.Milliseconds())) * time.Millisecond
	p.leaseSecs = max(lease, 0)
	p.wait = q.Get("wait") == "true"
	p.autoAck = q.Get("autoAck") == "true"
	if p.group != queueModeGroup { // queue mode ignores both (its name given or not)
		p.subNew = q.Get("subscriptionMode") == "new"
		if from := q.Get("subscriptionFrom"); from == "now" {
			p.subNew = true
		} else if from != "" {
			t, err := time.Parse(time.RFC3339Nano, from)
			if err != nil {
				return nil, "subscriptionFrom must be now or an ISO timestamp"
			}
			p.subFrom = t.UnixMicro()
		}
	}
	return p, ""
}

// handlePop serves GET /api/v1/pop/queue/{queue} and its partition form.
func (b *Broker) handlePop(w http.ResponseWriter, r *http.Request, c *call) {
	p, msg := parsePopParams(r)
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	p.queue = r.PathValue("queue")
	if part := r.PathValue("partition"); part != "" {
		p.onePart, p.hasOnePart, p.partitions = part, true, 1
	}
	if r.URL.Path == "/api/v1/pop" {
		p.discover, p.queue = true, ""
		p.namespace, p.task = r.URL.Query().Get("namespace"), r.URL.Query().Get("task")
		if p.namespace == "" && p.task == "" {
			writeBody(w, http.StatusBadRequest, []byte(`{"success":false,"error":"namespace or task is required","messages":[]}`))
			return
		}
	}
	var wt *waiter
	if p.wait && p.timeout > 0 {
		wt = newWaiter()
		defer b.unparkPop(c.tenant, p, wt)
	}
	deadline := time.Now().Add(p.timeout)
	var pk parking
	defer pk.stop()
	for {
		out, err := b.popOnce(c.tenant, p, wt)
		if err != nil {
			writeError(w, http.StatusInternalServerError, "pop failed")
			b.log.Error("queen-dev: pop", "err", err)
			return
		}
		if out != nil {
			writeBody(w, http.StatusOK, out)
			return
		}
		left := time.Until(deadline)
		if wt == nil || left <= 0 || b.draining() {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if !pk.wait(r.Context(), wt, left, b.closing) {
			return
		}
	}
}

// popOnce claims what it can and renders the answer (nil: nothing to
// deliver). With wt it parks wt on the partitions it looked at, so that a
// write to one of them wakes the long poll.
func (b *Broker) popOnce(tenantName string, p *popParams, wt *waiter) ([]byte, error) {
	if !b.enter() {
		return nil, errClosed
	}
	defer b.leave()
	now := b.now()
	nowUS := now.UnixMicro()
	b.mu.Lock()
	targets := b.popTargets(b.st.tenant(tenantName), p)
	if wt != nil {
		for _, tg := range targets {
			tg.q.parts[tg.part].waiters[wt] = struct{}{}
		}
	}
	leaseID := newUUIDv7(now)
	batch := b.db.NewBatch()
	var out []byte
	claimed, budget := 0, p.batch
	var err error
	var first popTarget
	// The group's subscription per queue: read, or registered by this pop
	// (queue form and discovery; the partition form only reads it, as
	// Queen's pinned pop writes no registration; queue mode's is always
	// "all", as Queen registers it). seeded holds the cursors a
	// registration wrote into the batch.
	subs, seeded := map[*queue]*subscription{}, map[string]*cursor{}
	for _, tg := range targets {
		if _, ok := subs[tg.q]; ok {
			continue
		}
		var sub *subscription
		if sub, err = b.getSub(tg.q.id, p.group); err == nil && sub == nil && !p.hasOnePart {
			sub, err = b.registerSub(batch, tg.q, p, nowUS, seeded)
		}
		if err != nil {
			break
		}
		subs[tg.q] = sub
	}
	for _, tg := range targets {
		if err != nil {
			break
		}
		if claimed == p.partitions || budget == 0 {
			break
		}
		q, n := tg.q, tg.part
		part := q.parts[n]
		lease := p.leaseSecs
		if lease <= 0 {
			lease = q.opts[optLeaseTime].num
		}
		if lease <= 0 {
			lease = defaultLease
		}
		cur := seeded[q.id+"\x00"+n]
		if cur == nil {
			if cur, err = b.getCursor(q.id, n, p.group); err != nil {
				break
			}
		}
		if cur == nil {
			if cur, err = b.seedCursor(q, part, p, subs[q]); err != nil {
				break
			}
			batch.Set(keyCursor(q.id, n, p.group), encodeCursor(cur), nil) // first contact seeds it, delivered or not
		}
		if cur.leased(nowUS) {
			continue
		}
		start := max(cur.committed+1, part.lso)
		if start >= part.hwm {
			continue
		}
		var msgs []byte
		var last int64
		if msgs, last, err = b.renderPopped(q.id, part, start, budget, p, leaseID); err != nil {
			break
		}
		budget -= int(last - start + 1)
		if cur.leaseID != "" {
			batch.Delete(keyLease(cur.leaseID, q.id, n, p.group), nil)
		}
		if p.autoAck {
			cur.consumed += last - cur.committed
			cur.committed, cur.leaseID, cur.leaseExpires, cur.batchEnd = last, "", 0, last
		} else {
			cur.leaseID, cur.leaseExpires, cur.batchEnd = leaseID, nowUS+lease*1e6, last
			batch.Set(keyLease(leaseID, q.id, n, p.group), nil, nil)
		}
		batch.Set(keyCursor(q.id, n, p.group), encodeCursor(cur), nil)
		if claimed == 0 {
			first = tg
		} else {
			out = append(out, ',')
		}
		out = append(out, msgs...)
		claimed++
	}
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
	if claimed == 0 {
		return nil, nil
	}
	if p.autoAck {
		leaseID = ""
	}
	body := make([]byte, 0, len(out)+256)
	body = append(body, `{"success":true,"queue":`...)
	body = jsontext.AppendString(body, p.queue) // "" on the discovery route
	body = append(body, `,"partition":`...)
	body = jsontext.AppendString(body, first.part)
	body = append(body, `,"partitionId":`...)
	body = jsontext.AppendString(body, partitionID(first.q.id, first.part))
	body = append(body, `,"leaseId":`...)
	body = jsontext.AppendString(body, leaseID)
	body = append(body, `,"consumerGroup":`...)
	body = jsontext.AppendString(body, p.group)
	body = append(body, `,"messages":[`...)
	body = append(body, out...)
	body = append(body, `],"partitionsClaimed":`...)
	body = strconv.AppendInt(body, int64(claimed), 10)
	return append(body, '}'), nil
}

// popTarget is one partition a pop may claim.
type popTarget struct {
	q    *queue
	part string
}

// popTargets are the partitions p may claim, in order: the named queue's
// (or its one named partition), or on the discovery route every partition
// of every queue matching namespace and task, by queue name then
// partition. The caller holds b.mu.
func (b *Broker) popTargets(t *tenant, p *popParams) []popTarget {
	var qs []*queue
	if p.discover {
		for _, q := range t.queues {
			if (p.namespace == "" || q.opts[optNamespace].str == p.namespace) && (p.task == "" || q.opts[optTask].str == p.task) {
				qs = append(qs, q)
			}
		}
		sort.Slice(qs, func(i, j int) bool { return qs[i].name < qs[j].name })
	} else if q := t.queues[p.queue]; q != nil {
		qs = []*queue{q}
	}
	var out []popTarget
	for _, q := range qs {
		if p.hasOnePart {
			if q.parts[p.onePart] != nil {
				out = append(out, popTarget{q, p.onePart})
			}
			continue
		}
		start := len(out)
		for n := range q.parts {
			out = append(out, popTarget{q, n})
		}
		sort.Slice(out[start:], func(i, j int) bool { return out[start+i].part < out[start+j].part })
	}
	return out
}

// unparkPop takes wt off every partition popOnce may have parked it on.
func (b *Broker) unparkPop(tenantName string, p *popParams, wt *waiter) {
	if wt == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.st.tenant(tenantName)
	for _, q := range t.queues {
		if p.discover || q.name == p.queue {
			for _, part := range q.parts {
				delete(part.waiters, wt)
			}
		}
	}
}

// renderPopped renders up to limit messages of part from start, returning
// the last offset rendered.
func (b *Broker) renderPopped(qid string, part *partition, start int64, limit int, p *popParams, leaseID string) ([]byte, int64, error) {
	ri := b.records(qid, part.name, start, part.hwm)
	pid := partitionID(qid, part.name)
	if p.autoAck {
		leaseID = ""
	}
	var out []byte
	last, n := start-1, 0
	for n < limit {
		off, rec, ok := ri.next()
		if !ok {
			break
		}
		if n > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"id":`...)
		out = jsontext.AppendString(out, string(rec.msgID))
		out = append(out, `,"transactionId":`...)
		out = jsontext.AppendString(out, string(rec.transactionID()))
		out = append(out, `,"traceId":null,"data":`...)
		if len(rec.payload) == 0 {
			out = append(out, "null"...)
		} else {
			out = append(out, rec.payload...)
		}
		out = append(out, `,"producerSub":null,"createdAt":`...)
		out = jsontext.AppendString(out, time.UnixMicro(rec.ts).UTC().Format("2006-01-02T15:04:05.000Z"))
		out = append(out, `,"partitionId":`...)
		out = jsontext.AppendString(out, pid)
		out = append(out, `,"partition":`...)
		out = jsontext.AppendString(out, part.name)
		out = append(out, `,"leaseId":`...)
		out = jsontext.AppendString(out, leaseID)
		out = append(out, `,"consumerGroup":`...)
		out = jsontext.AppendString(out, p.group)
		out = append(out, '}')
		last = off
		n++
	}
	return out, last, ri.close()
}

// firstAtOrAfter is the committed position that makes the record stored
// at or after ts (unix µs) the next one: a linear walk, first contact only.
func (b *Broker) firstAtOrAfter(qid string, part *partition, ts int64) (int64, error) {
	ri := b.records(qid, part.name, part.lso, part.hwm)
	pos := part.hwm - 1
	for off, rec, ok := ri.next(); ok; off, rec, ok = ri.next() {
		if rec.ts >= ts {
			pos = off - 1
			break
		}
	}
	return pos, ri.close()
}
