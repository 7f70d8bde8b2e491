package dev

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

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

// pushPlan is the decided effect of a set of items: ops to commit and one
// outcome per item. windowDup is the first item that repeats a record
// already stored inside the dedup window (-1 if none); a transaction rolls
// back on it, a plain push reports it as duplicate.
type pushPlan struct {
	ops       []op
	out       []pushOutcome
	windowDup int
}

type partKey struct{ queue, part string }

// planPush decides offsets under b.mu without changing state: items of one
// partition get contiguous offsets from its high watermark, in item order;
// missing queues are created with default options.
func (b *Broker) planPush(tenantName string, items []pushItem, now time.Time) *pushPlan {
	t := b.st.tenant(tenantName)
	nowUs := now.UnixMicro()
	plan := &pushPlan{out: make([]pushOutcome, len(items)), windowDup: -1}
	groups := map[partKey]*opRecords{}
	var order []*opRecords
	created := map[string]bool{}
	var seen map[partKey]map[string]int
	for i := range items {
		it := &items[i]
		q := t.queues[it.queue]
		if q == nil && !created[it.queue] {
			created[it.queue] = true
			plan.ops = append(plan.ops, &opQueueSet{tenant: tenantName, name: it.queue, id: newUUID(), created: now.UnixMilli(), opts: defaultOptions()})
		}
		var p *partition
		if q != nil {
			p = q.parts[it.part]
		}
		k := partKey{it.queue, it.part}
		g := groups[k]
		if g == nil {
			g = &opRecords{tenant: tenantName, queue: it.queue, part: it.part, ts: nowUs}
			if p != nil {
				g.base = p.hwm()
				g.ts = max(nowUs, p.lastTS)
			}
			groups[k] = g
			order = append(order, g)
		}
		if it.txID != "" {
			if j, ok := seen[k][it.txID]; ok {
				plan.out[i] = plan.out[j]
				plan.out[i].duplicate = true
				continue
			}
			if p != nil && p.dedup != nil {
				window := q.opts.dedupWindow()
				if e, ok := p.dedup[it.txID]; ok && window > 0 && nowUs-e.ts < window {
					plan.out[i] = pushOutcome{msgID: e.msgID, txID: it.txID, offset: e.offset, duplicate: true}
					if plan.windowDup < 0 {
						plan.windowDup = i
					}
					continue
				}
			}
			if seen == nil {
				seen = map[partKey]map[string]int{}
			}
			if seen[k] == nil {
				seen[k] = map[string]int{}
			}
			seen[k][it.txID] = i
		}
		msgID := newUUIDv7(now)
		plan.out[i] = pushOutcome{msgID: msgID, txID: it.txID, offset: g.base + int64(len(g.recs))}
		if it.txID == "" {
			plan.out[i].txID = msgID
		}
		g.recs = append(g.recs, record{payload: it.payload, msgID: msgID, txID: it.txID, ts: g.ts})
	}
	for _, g := range order {
		if len(g.recs) > 0 {
			plan.ops = append(plan.ops, g)
		}
	}
	return plan
}

// decodePushBody returns the items of a push body, which the caller gives
// away: the payloads returned alias it (the push route reads its body into
// a buffer of its own, ownedBody).
func decodePushBody(body []byte) ([]rawItem, error) {
	if raws, ok := scanPushBody(body); ok {
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

// handlePush stores items (§5) and answers 201 with one result per item.
func (b *Broker) handlePush(w http.ResponseWriter, r *http.Request, c *call) {
	raws, err := decodePushBody(c.body)
	if err != nil {
		badBody(w, err.Error())
		return
	}
	items := make([]pushItem, len(raws))
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
	b.mu.Lock()
	plan := b.planPush(c.tenant, items, b.now())
	bt, err := b.commit(plan.ops)
	b.mu.Unlock()
	if err == nil {
		err = bt.wait()
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, "push failed: "+err.Error())
		return
	}
	out := make([]byte, 0, 160*len(items))
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
	writeBody(w, http.StatusCreated, out)
}
