package dev

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/queen-mq/queen-kafka/internal/jsontext"
)

// DefaultPartition is the partition of an item that names none.
const DefaultPartition = "Default"

// maxTransactionID bounds a client-chosen dedup key (§5).
const maxTransactionID = 65535

// rawItem is a push item as decoded; presence matters, hence the raw fields.
type rawItem struct {
	Queue         *string         `json:"queue"`
	Partition     json.RawMessage `json:"partition"`
	Payload       json.RawMessage `json:"payload"`
	Data          json.RawMessage `json:"data"`
	TransactionID *string         `json:"transactionId"`
}

// pushItem is a validated item.
type pushItem struct {
	queue, part, txID string
	payload           []byte
}

// checkItem validates one item. inTxn selects the transaction route's
// rules: payload may be spelled data, and an explicit "" partition is kept.
// parts decodes partition tokens for every item of one request.
func checkItem(i int, raw *rawItem, inTxn bool, parts *tokenCache) (pushItem, error) {
	var it pushItem
	if raw.Queue == nil || *raw.Queue == "" {
		return it, fmt.Errorf("item %d: queue is required", i)
	}
	it.queue = *raw.Queue
	if hasControl(it.queue) {
		return it, fmt.Errorf("item %d: control characters in queue", i)
	}
	it.part = DefaultPartition
	if len(raw.Partition) > 0 {
		part, ok := parts.decode(raw.Partition)
		if !ok {
			return it, fmt.Errorf("item %d: partition must be a string", i)
		}
		if part != nil {
			it.part = *part
		}
		if it.part == "" && !inTxn {
			it.part = DefaultPartition
		}
		if hasControl(it.part) {
			return it, fmt.Errorf("item %d: control characters in partition", i)
		}
	}
	it.payload = raw.Payload
	if it.payload == nil && inTxn {
		it.payload = raw.Data
	}
	if it.payload == nil {
		return it, fmt.Errorf("item %d: payload is required", i)
	}
	if raw.TransactionID != nil {
		it.txID = *raw.TransactionID
		if len(it.txID) > maxTransactionID {
			return it, fmt.Errorf("item %d: transactionId longer than %d bytes", i, maxTransactionID)
		}
		if hasControl(it.txID) {
			return it, fmt.Errorf("item %d: control characters in transactionId", i)
		}
	}
	return it, nil
}

// pushOutcome is what happened to one item.
type pushOutcome struct {
	msgID, txID string
	offset      int64
	duplicate   bool
}

// pushPlan is the decided effect of a set of items: queues to create,
// records to store per partition, and one outcome per item. windowDup is
// the first item that repeats a record already stored inside the dedup
// window (-1 if none); a transaction rolls back on it, a plain push reports
// it as duplicate.
type pushPlan struct {
	tenant    string
	created   []*queue // new queues, with default options
	groups    []*recordGroup
	out       []pushOutcome
	windowDup int
}

// recordGroup is the records one request stores in one partition, at
// offsets base, base+1, … and with one commit time.
type recordGroup struct {
	q      *queue
	part   string
	p      *partition // nil: the partition is new
	base   int64
	ts     int64
	recs   []record
	hasTxn bool
	// staleRuns are older dedup runs that start inside a run this group
	// stores (dedup.go): deleted with it.
	staleRuns [][]byte
	// The transactionIds the group stores, to find an item repeating one
	// of the same request. While they are one stem's numbers counting up
	// (a producer's, as the facade pushes them), an id past the top one
	// cannot repeat any and only the top is kept (seqStem, seqTop); the
	// first that is not makes the set of them all (seen), as a map of
	// every id was for every push before.
	seqStem string
	seqTop  int64
	seqN    int
	seen    map[string]int // nil while the ids count up
}

// repeats reports whether items[i]'s transactionId is one the group
// already stores from this request, and the item that stores it.
func (g *recordGroup) repeats(items []pushItem, out []pushOutcome, i int) (int, bool) {
	if g.seen == nil {
		stem, num, ok := splitSeq(items[i].txID)
		if ok && (g.seqN == 0 || (stem == g.seqStem && num > g.seqTop)) {
			return 0, false
		}
		// Out of the run: the set of the ids stored so far (each by the
		// first item that stored it; a duplicate stores nothing).
		g.seen = make(map[string]int, g.seqN+1)
		for j := range i {
			it := &items[j]
			if it.txID == "" || out[j].duplicate || it.part != g.part || it.queue != g.q.name {
				continue
			}
			if _, dup := g.seen[it.txID]; !dup {
				g.seen[it.txID] = j
			}
		}
	}
	j, ok := g.seen[items[i].txID]
	return j, ok
}

// stores notes that item i stores transactionId txID in the group.
func (g *recordGroup) stores(txID string, i int) {
	if g.seen != nil {
		g.seen[txID] = i
		return
	}
	// repeats has just checked that txID continues the run.
	g.seqStem, g.seqTop, _ = splitSeq(txID)
	g.seqN++
}

type partKey struct{ queue, part string }

// planPush decides offsets under b.mu without changing state: items of one
// partition get contiguous offsets from its high watermark, in item order;
// missing queues are created with default options. r reads the store (the
// transaction's batch, so that its KV rider is seen, or the database).
// sc, when not nil, lends the plan its memory (the push route's).
func (b *Broker) planPush(tenantName string, items []pushItem, now time.Time, r pebble.Reader, sc *pushScratch) (*pushPlan, error) {
	t := b.st.tenant(tenantName)
	nowUs := now.UnixMicro()
	if sc == nil {
		sc = &pushScratch{}
	}
	plan := &pushPlan{tenant: tenantName, out: sc.outcomes(len(items)), windowDup: -1}
	// The records of every group share one array: a group's are a run of
	// it, as long as its items in a row (groupItems).
	recs := sc.records(len(items))
	// Message ids, one per item, in one string (a record takes the next).
	sc.ids = appendUUIDv7s(sc.ids[:0], now, len(items))
	ids, nextID := string(sc.ids), 0
	groups := map[partKey]*recordGroup{}
	created := map[string]*queue{}
	// A push's items come a partition at a time (the facade's do): the
	// previous item's group is looked up first.
	var last *recordGroup
	dedup := dedupReader{r: r}
	defer dedup.close()
	for i := range items {
		it := &items[i]
		g := last
		if g == nil || g.part != it.part || g.q.name != it.queue {
			q := t.queues[it.queue]
			if q == nil {
				if q = created[it.queue]; q == nil {
					q = newQueue(it.queue, newUUID(), now.UnixMilli(), defaultOptions())
					created[it.queue] = q
					plan.created = append(plan.created, q)
				}
			}
			k := partKey{it.queue, it.part}
			if g = groups[k]; g == nil {
				p := q.parts[it.part]
				n := groupItems(items, i)
				g = &recordGroup{q: q, part: it.part, p: p, ts: nowUs, recs: recs[:0:n]}
				recs = recs[n:]
				if p != nil {
					g.base = p.hwm
					g.ts = max(nowUs, p.lastTS)
				}
				groups[k] = g
				plan.groups = append(plan.groups, g)
			}
			last = g
		}
		q, p := g.q, g.p
		if it.txID != "" {
			if j, ok := g.repeats(items, plan.out, i); ok {
				plan.out[i] = plan.out[j]
				plan.out[i].duplicate = true
				continue
			}
			if window := q.opts.dedupWindow(); p != nil && window > 0 {
				e, found, err := dedup.get(p, q.id, it.part, it.txID)
				if err != nil {
					return nil, err
				}
				if found && nowUs-e.ts < window {
					plan.out[i] = pushOutcome{msgID: e.msgID, txID: it.txID, offset: e.offset, duplicate: true}
					if plan.windowDup < 0 {
						plan.windowDup = i
					}
					continue
				}
			}
			g.stores(it.txID, i)
			g.hasTxn = true
		}
		msgID := ids[nextID*uuidLen : (nextID+1)*uuidLen]
		nextID++
		plan.out[i] = pushOutcome{msgID: msgID, txID: it.txID, offset: g.base + int64(len(g.recs))}
		if it.txID == "" {
			plan.out[i].txID = msgID
		}
		g.recs = append(g.recs, record{payload: it.payload, msgID: msgID, txID: it.txID, ts: g.ts})
	}
	for _, g := range plan.groups {
		if g.hasTxn {
			var err error
			if g.staleRuns, err = dedup.covered(g.p, g.q.id, g.part, g.recs); err != nil {
				return nil, err
			}
		}
	}
	return plan, nil
}

// groupItems is how many items from i on name items[i]'s partition in a
// row: a partition's items come together in the facade's pushes; a group
// whose items do not grows its records past them as a slice does.
func groupItems(items []pushItem, i int) int {
	j := i + 1
	for j < len(items) && items[j].part == items[i].part && items[j].queue == items[i].queue {
		j++
	}
	return j - i
}

// batchSizeHint is about the bytes a push of items takes in its engine
// batch (payloads, and per record its ids in the batch value and the dedup
// run, keys and varints), so that the batch is allocated once rather than
// doubled and copied as it fills.
func batchSizeHint(items []pushItem) int {
	n := 1 << 10
	for i := range items {
		n += len(items[i].payload) + len(items[i].txID) + 96
	}
	return n
}

// write adds the plan's queues, records, dedup entries and partition
// metadata to batch, and returns what to change in memory once the batch
// is applied.
func (plan *pushPlan) write(batch *pebble.Batch, st *state) func() {
	for _, q := range plan.created {
		batch.Set(keyQueue(plan.tenant, q.name), encodeQueue(q.id, q.created, &q.opts), nil)
	}
	type change struct {
		g    *recordGroup
		next partition
	}
	var changes []change
	var kbuf, vbuf []byte
	for _, g := range plan.groups {
		if len(g.recs) == 0 {
			continue
		}
		next := partition{name: g.part, hwm: g.base, lso: g.base}
		if g.p != nil {
			next = *g.p
		}
		// A value holds the group's records (records.go), or up to
		// maxBatchValue bytes of them, encoded straight into the batch's
		// memory.
		prefix := keyPrefix(kindBatch, g.q.id, g.part)
		for from := 0; from < len(g.recs); {
			to := batchEnd(g.recs, from)
			kbuf = appendOffset(append(kbuf[:0], prefix...), g.base+int64(from))
			recs := g.recs[from:to]
			op := batch.SetDeferred(len(kbuf), batchValueSize(g.ts, recs))
			copy(op.Key, kbuf)
			if v := appendBatchValue(op.Value[:0], g.ts, recs); len(v) != len(op.Value) {
				panic(fmt.Sprintf("queen-dev: batch value of %d bytes, sized %d", len(v), len(op.Value)))
			}
			op.Finish()
			from = to
		}
		for i := range g.recs {
			next.bytes += int64(len(g.recs[i].payload))
		}
		// The newest record wins: a transactionId is stored again only
		// once its previous record left the dedup window.
		if g.hasTxn {
			for _, k := range g.staleRuns {
				batch.Delete(k, nil)
			}
			_, vbuf = writeDedup(batch, g.q.id, g.part, g.base, g.ts, g.recs, nil, vbuf)
			vbuf = appendBatchAge(vbuf[:0], g.ts, g.base, g.recs)
			batch.Set(keyBatchAge(g.q.id, g.part, g.base), vbuf, nil)
		}
		next.hwm = g.base + int64(len(g.recs))
		next.lastTS = max(next.lastTS, g.ts)
		batch.Set(keyPart(g.q.id, g.part), encodePart(&next), nil)
		changes = append(changes, change{g, next})
	}
	return func() {
		t := st.tenant(plan.tenant)
		for _, q := range plan.created {
			t.queues[q.name] = q
			st.mutations++
		}
		for _, c := range changes {
			q := c.g.q
			p := q.parts[c.g.part]
			fresh := p == nil
			if fresh {
				p = &partition{name: c.g.part, waiters: map[*waiter]struct{}{}, dedupFloor: c.g.base}
				q.parts[c.g.part] = p
				wakeAll(q.waiters[c.g.part])
				delete(q.waiters, c.g.part) // they register on p when they read again
			}
			if c.g.hasTxn {
				p.storedRuns(c.g.recs, fresh)
			}
			p.hwm, p.lso, p.bytes, p.lastTS = c.next.hwm, c.next.lso, c.next.bytes, c.next.lastTS
			wakeAll(p.waiters)
			st.mutations++
		}
	}
}

// decodePushBody returns the items of a push body, in dst's memory when
// it has room: the payloads returned alias it, and are copied into the
// engine batch before the handler returns (the push route's body buffer is
// pooled).
func decodePushBody(dst []rawItem, body []byte) ([]rawItem, error) {
	if raws, ok := scanPushBody(dst, body); ok {
		return raws, nil
	}
	var slow struct {
		Items *[]rawItem `json:"items"`
	}
	if err := json.Unmarshal(body, &slow); err != nil {
		return nil, err
	}
	if slow.Items == nil {
		return nil, fmt.Errorf("items is required")
	}
	return *slow.Items, nil
}

// pushScratch is the memory one push works in, kept for the next (a
// sync.Pool): the items as decoded and as checked, their outcomes and
// records, the message ids and the answer, each as long as a push's items.
// Behind the facade a push is a producer's request of about 1,400 records,
// and these were made anew for each, grown by doubling (two thirds of the
// bytes queen-dev allocated under the produce benchmark, which the GC then
// collected and the runtime's scavenger returned to the kernel).
type pushScratch struct {
	raws   []rawItem
	items  []pushItem
	out    []pushOutcome
	recs   []record
	ids    []byte
	answer []byte
}

var pushScratches = sync.Pool{New: func() any { return new(pushScratch) }}

// maxScratchItems bounds the pushes whose memory is kept: a push at the
// body ceiling of tiny items would otherwise pin tens of MB in the pool.
const maxScratchItems = 1 << 14

// release clears what refers to the request (its body, its strings) and
// gives sc back, unless it grew past maxScratchItems.
func (sc *pushScratch) release() {
	if cap(sc.raws) > maxScratchItems || cap(sc.items) > maxScratchItems {
		return
	}
	// Past their lengths they are zero: each use clears what it used.
	clear(sc.raws)
	clear(sc.items)
	clear(sc.out)
	clear(sc.recs)
	sc.raws, sc.items, sc.out, sc.recs = sc.raws[:0], sc.items[:0], sc.out[:0], sc.recs[:0]
	sc.ids, sc.answer = sc.ids[:0], sc.answer[:0]
	pushScratches.Put(sc)
}

// outcomes is a zeroed slice of n outcomes.
func (sc *pushScratch) outcomes(n int) []pushOutcome {
	sc.out = slices.Grow(sc.out[:0], n)[:n]
	clear(sc.out)
	return sc.out
}

// records is room for n records.
func (sc *pushScratch) records(n int) []record {
	sc.recs = slices.Grow(sc.recs[:0], n)[:n]
	return sc.recs
}

// handlePush stores items (§5) and answers 201 with one result per item.
func (b *Broker) handlePush(w http.ResponseWriter, r *http.Request, c *call) {
	sc := pushScratches.Get().(*pushScratch)
	defer sc.release()
	raws, err := decodePushBody(sc.raws, c.body)
	if err != nil {
		clear(sc.raws[:cap(sc.raws)]) // what the scanner read before it gave up
		badBody(w, err.Error())
		return
	}
	sc.raws = raws
	sc.items = slices.Grow(sc.items[:0], len(raws))[:len(raws)]
	items := sc.items
	var parts tokenCache
	for i := range raws {
		it, err := checkItem(i, &raws[i], false, &parts)
		if err != nil {
			badBody(w, err.Error())
			return
		}
		items[i] = it
	}
	if len(items) == 0 {
		writeBody(w, http.StatusCreated, []byte("[]"))
		return
	}
	if !b.enter() {
		writeError(w, http.StatusInternalServerError, "push failed: "+errClosed.Error())
		return
	}
	defer b.leave()
	b.mu.Lock()
	plan, err := b.planPush(c.tenant, items, b.now(), b.db, sc)
	var pd *pending
	if err == nil {
		batch := b.pushBatches.get(b.db, batchSizeHint(items))
		after := plan.write(batch, b.st)
		keep := reusable(batch)
		pd = b.apply(batch, after)
		if keep {
			pd.reuse = &b.pushBatches
		}
	}
	b.mu.Unlock()
	if err == nil {
		err = pd.wait()
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, "push failed: "+err.Error())
		return
	}
	out := slices.Grow(sc.answer[:0], 160*len(items))
	out = append(out, '[')
	for i := range items {
		o := &plan.out[i]
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"index":`...)
		out = strconv.AppendInt(out, int64(i), 10)
		out = append(out, `,"message_id":"`...)
		out = append(out, o.msgID...)
		out = append(out, `","transaction_id":`...)
		out = jsontext.AppendString(out, o.txID)
		out = append(out, `,"queueName":`...)
		out = jsontext.AppendString(out, items[i].queue)
		if o.duplicate {
			out = append(out, `,"status":"duplicate","offset":`...)
		} else {
			out = append(out, `,"status":"queued","offset":`...)
		}
		out = strconv.AppendInt(out, o.offset, 10)
		out = append(out, '}')
	}
	out = append(out, ']')
	sc.answer = out
	writeBody(w, http.StatusCreated, out)
}
