package dev

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/queen-mq/queen-kafka/internal/jsontext"
)

// txnError is a transaction refused before anything was applied.
type txnError struct {
	status int
	reason string
	msg    string
}

func txnBad(format string, args ...any) *txnError {
	return &txnError{status: http.StatusBadRequest, reason: "bad_request", msg: fmt.Sprintf(format, args...)}
}

func writeTxnError(w http.ResponseWriter, txID string, e *txnError) {
	writeJSON(w, e.status, map[string]any{
		"transactionId": txID, "success": false, "reason": e.reason, "error": e.msg, "results": []any{},
	})
}

// txnRequest is a validated transaction body.
type txnRequest struct {
	items []pushItem
	acks  []ackItem
	// slots is the flat index space of operations in request order: a
	// push item (ack false) or an ack, by its index in items or acks.
	slots []txnSlot
	kv    []*kvOp
}

// batchBytes is about what req's records take in the engine's batch, a
// little over rather than under (the records' batch values, their dedup
// runs and keys: see pushPlan.write); 0 for a transaction without records.
func (req *txnRequest) batchBytes() int {
	if len(req.items) == 0 {
		return 0
	}
	n := 64 << 10
	for i := range req.items {
		it := &req.items[i]
		// The value's entry (the message id, the transactionId and three
		// lengths), and the dedup entry at its largest: a run of its own
		// (a key naming the queue id, partition, stem and number, a value
		// holding the offset, time and message id, and its line in the
		// batch-age value), which is what numbered keys dealt round the
		// partitions make of every record (TestTxnBatchSizedUpFront).
		n += len(it.payload) + 3*len(it.txID) + len(it.part) + 2*(uuidLen+2) + 100
	}
	return n
}

// answerBytes is about what the committed answer to req takes, a little
// over rather than under: a push echo echoes its transactionId and queue
// (some 200 bytes for the facade's records, where a guess of 128 had the
// answer of a 100 ms commit, 3-6 MB, doubled and copied as it was
// written); an ack's and a kv result's are bounded as before.
func (req *txnRequest) answerBytes() int {
	n := 256 + 256*len(req.kv) + 128*len(req.acks)
	for i := range req.items {
		it := &req.items[i]
		// {"index":N,"type":"push","success":true,"transactionId":"…",
		// "messageId":"<uuid>","queueName":"…","duplicate":true}, with a
		// generated id as the transactionId when none was sent.
		n += 160 + max(len(it.txID), uuidLen) + len(it.queue)
	}
	return n
}

type txnSlot struct {
	ack bool
	i   int
}

// decodeTxn decodes and validates a transaction body. The fast scanner
// (scanTxnBody) serves the plain shape the facade sends; anything else goes
// to decodeTxnJSON, the encoding/json reference, which answers every bad
// body. Both hand back the same request or the same refusal for any body
// the scanner accepts (FuzzTxnScan). The items' payloads alias body, which
// the caller keeps until the request is written (pebble's batch copies).
func decodeTxn(body []byte) (*txnRequest, *txnError) {
	if t, ok := scanTxnBody(body); ok && !t.acks() {
		return t.check()
	}
	return decodeTxnJSON(body)
}

// txnBody is a transaction body the scanner decoded, not yet validated.
type txnBody struct {
	timers, leases int               // elements of the two riders queen-dev refuses
	kv             []json.RawMessage // the KV rider's ops
	hasKV          bool              // kv present and not null
	ops            []txnOp
	hasOps         bool // operations present and not null
}

// txnOp is one operation: its type and its items (the operation itself as
// the one item when it has no items list).
type txnOp struct {
	typ   *string
	items []rawItem
}

// check validates t in decodeTxnJSON's order, with its messages.
func (t *txnBody) check() (*txnRequest, *txnError) {
	for _, f := range []struct {
		name string
		n    int
	}{{"timers", t.timers}, {"requiredLeases", t.leases}} {
		if f.n > 0 {
			return nil, txnUnsupported(f.name)
		}
	}
	req := &txnRequest{}
	if t.hasKV {
		kv, e := checkTxnKV(t.kv)
		if e != nil {
			return nil, e
		}
		req.kv = kv
	}
	if !t.hasOps {
		if len(req.kv) == 0 {
			return nil, txnBad("operations is required")
		}
		return req, nil
	}
	n := 0
	for i := range t.ops {
		n += len(t.ops[i].items)
	}
	req.items = make([]pushItem, 0, n)
	req.slots = make([]txnSlot, 0, n)
	var parts tokenCache
	for i := range t.ops {
		op := &t.ops[i]
		if e := checkTxnOpType(i, op.typ); e != nil {
			return nil, e
		}
		for j := range op.items {
			it, err := checkItem(len(req.items), &op.items[j], true, &parts)
			if err != nil {
				return nil, txnBad("operation %d: %v", i, err)
			}
			req.slots = append(req.slots, txnSlot{i: len(req.items)})
			req.items = append(req.items, it)
		}
	}
	return req, nil
}

// acks reports an ack operation: those are decodeTxnJSON's alone.
func (t *txnBody) acks() bool {
	for i := range t.ops {
		if t.ops[i].typ != nil && *t.ops[i].typ == "ack" {
			return true
		}
	}
	return false
}

func txnUnsupported(rider string) *txnError {
	return txnBad("%s are not supported by queen-dev", rider)
}

// checkTxnKV validates the KV rider's ops under the transaction's caps.
func checkTxnKV(ops []json.RawMessage) ([]*kvOp, *txnError) {
	kv, kerr := checkKVOps(ops, kvLimits{maxOps: txnMaxKVOps, maxKeys: txnMaxKVKeys, inTxn: true})
	if kerr != nil {
		e := txnBad("kv rider: %s: %s", kerr.reason, kerr.detail)
		if kerr.status == http.StatusRequestEntityTooLarge {
			e.status, e.reason = kerr.status, "payload_too_large"
		}
		return nil, e
	}
	return kv, nil
}

// checkTxnOpType refuses every operation type but push (an ack is taken
// before it is asked).
func checkTxnOpType(i int, t *string) *txnError {
	typ := ""
	if t != nil {
		typ = *t
	}
	switch typ {
	case "push":
		return nil
	case "kv", "timer":
		return txnBad("operation %d: %s is a top-level rider (\"%ss\" / \"kv\"), not an operation", i, typ, typ)
	}
	return txnBad("operation %d: unknown type %q", i, typ)
}

// decodeTxnJSON is decodeTxn through encoding/json: the authority for
// every body the scanner does not take.
func decodeTxnJSON(body []byte) (*txnRequest, *txnError) {
	var raw struct {
		Operations     json.RawMessage `json:"operations"`
		KV             json.RawMessage `json:"kv"`
		Timers         json.RawMessage `json:"timers"`
		RequiredLeases json.RawMessage `json:"requiredLeases"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, txnBad("bad body: %v", err)
	}
	req := &txnRequest{}
	for _, f := range []struct {
		name string
		raw  json.RawMessage
	}{{"timers", raw.Timers}, {"requiredLeases", raw.RequiredLeases}} {
		if f.raw == nil || isNull(f.raw) {
			continue
		}
		var list []json.RawMessage
		if json.Unmarshal(f.raw, &list) != nil {
			return nil, txnBad("%s must be an array", f.name)
		}
		if len(list) > 0 {
			return nil, txnUnsupported(f.name)
		}
	}
	if raw.KV != nil && !isNull(raw.KV) {
		var ops []json.RawMessage
		if json.Unmarshal(raw.KV, &ops) != nil {
			return nil, txnBad("kv must be an array")
		}
		kv, e := checkTxnKV(ops)
		if e != nil {
			return nil, e
		}
		req.kv = kv
	}
	if raw.Operations == nil || isNull(raw.Operations) {
		if len(req.kv) == 0 {
			return nil, txnBad("operations is required")
		}
		return req, nil
	}
	var ops []json.RawMessage
	if json.Unmarshal(raw.Operations, &ops) != nil {
		return nil, txnBad("operations must be an array")
	}
	var parts tokenCache
	for i, rawOp := range ops {
		var head struct {
			Type  *string          `json:"type"`
			Items *json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(rawOp, &head); err != nil {
			return nil, txnBad("operation %d: %v", i, err)
		}
		if head.Type != nil && *head.Type == "ack" {
			// The same fields as POST /api/v1/ack (queen-api-consume.md §4).
			var a ackItem
			if err := json.Unmarshal(rawOp, &a); err != nil {
				return nil, txnBad("operation %d: %v", i, err)
			}
			req.slots = append(req.slots, txnSlot{ack: true, i: len(req.acks)})
			req.acks = append(req.acks, a)
			continue
		}
		if e := checkTxnOpType(i, head.Type); e != nil {
			return nil, e
		}
		var raws []rawItem
		if head.Items == nil || isNull(*head.Items) {
			var one rawItem
			if err := json.Unmarshal(rawOp, &one); err != nil {
				return nil, txnBad("operation %d: %v", i, err)
			}
			raws = []rawItem{one}
		} else if err := json.Unmarshal(*head.Items, &raws); err != nil {
			return nil, txnBad("operation %d: items: %v", i, err)
		}
		for j := range raws {
			it, err := checkItem(len(req.items), &raws[j], true, &parts)
			if err != nil {
				return nil, txnBad("operation %d: %v", i, err)
			}
			req.slots = append(req.slots, txnSlot{i: len(req.items)})
			req.items = append(req.items, it)
		}
	}
	return req, nil
}

// handleTxn answers §8: the KV rider first, then the records, as one unit.
func (b *Broker) handleTxn(w http.ResponseWriter, r *http.Request, c *call) {
	txID := newUUID()
	req, terr := decodeTxn(c.body)
	if terr != nil {
		writeTxnError(w, txID, terr)
		return
	}
	n := len(req.slots)

	if !b.enter() {
		writeTxnError(w, txID, &txnError{status: http.StatusInternalServerError, reason: "db_error", msg: errClosed.Error()})
		return
	}
	defer b.leave()
	b.mu.Lock()
	now := b.now()
	x := b.newKVExecSized(c.tenant, now, req.batchBytes())
	res, fail := x.run(req.kv)
	var plan *pushPlan
	var pd *pending
	var err error
	var acks []ackResult
	ackFail := -1
	if x.err == nil && fail == nil && len(req.acks) > 0 {
		// The acks join the same batch: a rejected one rolls the unit back.
		if acks, err = b.planAcks(x.batch, c.tenant, req.acks, now.UnixMicro()); err == nil {
			for i := range acks {
				if !acks[i].Success {
					ackFail = i
					break
				}
			}
		}
	}
	switch {
	case x.err != nil:
		err = x.err
		x.rollback()
	case err != nil:
		x.rollback()
	case fail != nil, ackFail >= 0:
		x.rollback()
		pd = b.observed()
	default:
		// The records join the rider's batch: the transaction applies
		// entirely or not at all.
		plan, err = b.planPush(c.tenant, req.items, now, x.batch, nil)
		switch {
		case err != nil:
			x.rollback()
		case plan.windowDup >= 0:
			x.rollback()
			pd = b.observed()
		default:
			after := plan.write(x.batch, b.st)
			batch, counted := x.commitTo()
			if batch == nil {
				pd = b.observed()
				break
			}
			pd = b.apply(batch, func() {
				after()
				if counted != nil {
					counted()
				}
			})
		}
	}
	b.mu.Unlock()
	if err == nil {
		err = pd.wait()
	}
	if err != nil {
		writeTxnError(w, txID, &txnError{status: http.StatusInternalServerError, reason: "db_error", msg: err.Error()})
		return
	}

	out := make([]byte, 0, req.answerBytes())
	out = append(out, `{"transactionId":"`...)
	out = append(out, txID...)
	switch {
	case fail != nil:
		out = append(out, `","success":false,"reason":"kv_precondition","error":"kv_precondition_failed","results":[],`...)
		if b.opts.BareVerdicts {
			out = append(out, `"ok":false,"failedIndex":null,"kvReason":null,"version":null,"value":null`...)
		} else {
			out = appendPrecondition(out, fail, n+fail.op.index)
		}
		writeBody(w, http.StatusOK, append(out, '}'))
		return
	case ackFail >= 0:
		out = append(out, `","success":false,"reason":"ack_rejected","error":`...)
		out = jsontext.AppendString(out, fmt.Sprintf("ack %d (transactionId %q): %s", ackFail, req.acks[ackFail].TransactionID, *acks[ackFail].Error))
		writeBody(w, http.StatusOK, append(out, `,"results":[]}`...))
		return
	case ackFail >= 0:
		out = append(out, `","success":false,"reason":"ack_rejected","error":`...)
		out = jsontext.AppendString(out, fmt.Sprintf("ack %d (transactionId %q): %s", ackFail, req.acks[ackFail].TransactionID, *acks[ackFail].Error))
		writeBody(w, http.StatusOK, append(out, `,"results":[]}`...))
		return
	case plan.windowDup >= 0:
		out = append(out, `","success":false,"reason":"duplicate","error":`...)
		out = jsontext.AppendString(out, fmt.Sprintf("item %d: transactionId %q is already stored in %s/%s", plan.windowDup, req.items[plan.windowDup].txID, req.items[plan.windowDup].queue, req.items[plan.windowDup].part))
		writeBody(w, http.StatusOK, append(out, `,"results":[]}`...))
		return
	}
	out = append(out, `","success":true,"results":[`...)
	for flat, slot := range req.slots {
		if flat > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"index":`...)
		out = strconv.AppendInt(out, int64(flat), 10)
		if slot.ack {
			a := &acks[slot.i]
			out = append(out, `,"type":"ack","success":true,"transactionId":`...)
			out = jsontext.AppendString(out, a.TransactionID)
			out = append(out, `,"error":null,"dlq":`...)
			out = strconv.AppendBool(out, a.DLQ)
			out = append(out, '}')
			continue
		}
		i := slot.i
		o := &plan.out[i]
		out = append(out, `,"type":"push","success":true,"transactionId":`...)
		out = jsontext.AppendString(out, o.txID)
		out = append(out, `,"messageId":"`...)
		out = append(out, o.msgID...)
		out = append(out, `","queueName":`...)
		out = jsontext.AppendString(out, req.items[i].queue)
		if o.duplicate {
			out = append(out, `,"duplicate":true`...)
		}
		out = append(out, '}')
	}
	for i, o := range req.kv {
		if n+i > 0 {
			out = append(out, ',')
		}
		out = appendKVResult(out, o, &res[i], n+i, i)
	}
	writeBody(w, http.StatusOK, append(out, "]}"...))
}
