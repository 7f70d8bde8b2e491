package queen

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/queen-mq/queen-kafka/internal/bufpool"
	"github.com/queen-mq/queen-kafka/internal/jsontext"
)

// Each route is "METHOD path": call builds the request from it and every
// *Error names it, so the two cannot disagree.
const (
	routeQueues    = "GET /api/v1/resources/queues"
	routeConfigure = "POST /api/v1/configure"
	routeDelete    = "DELETE /api/v1/resources/queues"
	routePush      = "POST /api/v1/push"
	routeFetch     = "POST /api/v1/fetch"
	routeKV        = "POST /api/v1/kv"
	routeTxn       = "POST /api/v1/transaction"
	routeAuthMe    = "GET /auth/me"
)

// Queues lists the tenant's queues with live partition counts (§2).
func (c *Client) Queues(ctx context.Context) ([]QueueInfo, error) {
	var out QueueList
	if err := c.call(ctx, routeQueues, "", c.timeout, maxQueuesAnswer, nil, &out); err != nil {
		return nil, err
	}
	return out.Queues, nil
}

// Configure creates queue or changes its options (§3); options are spread at
// the top level of the body. It fails unless the echo says configured:true
// with no error.
func (c *Client) Configure(ctx context.Context, queue string, options map[string]any) (*ConfigureResult, error) {
	body := make(map[string]any, len(options)+1)
	for k, v := range options {
		body[k] = v
	}
	body["queue"] = queue
	var out ConfigureResult
	if err := c.call(ctx, routeConfigure, "", c.timeout, maxSmallAnswer, body, &out); err != nil {
		return nil, err
	}
	if !out.Configured || isJSONNonNull(out.Error) {
		return nil, protocolError(routeConfigure, "configure of %q not confirmed: error=%s", queue, string(out.Error))
	}
	return &out, nil
}

// DeleteQueue removes a queue and every record in it (§4).
func (c *Client) DeleteQueue(ctx context.Context, queue string) (*DeleteResult, error) {
	var out DeleteResult
	if err := c.call(ctx, routeDelete, "/"+escapeSegment(queue), c.timeout, maxSmallAnswer, nil, &out); err != nil {
		return nil, err
	}
	if isJSONNonNull(out.Error) {
		return nil, protocolError(routeDelete, "delete of %q: error=%s", queue, string(out.Error))
	}
	return &out, nil
}

// escapeSegment percent-encodes every byte outside RFC 3986 unreserved
// (A–Z a–z 0–9 - . _ ~), as §4 requires of the :queue segment;
// url.PathEscape would leave ':', '@', '&', '=', '+' and '$' raw.
func escapeSegment(s string) string {
	return percentEncode(s, func(c byte) bool { return plainByte(c) || c == '~' })
}

// The *ResultWire types shadow the embedded Index with a pointer so that a
// result without "index" is told apart from index 0; the *ResponseWire
// types shadow Results to hold them.
type pushResultWire struct {
	PushResult
	Index *int `json:"index"`
}

type kvResultWire struct {
	KVResult
	Index *int `json:"index"`
}

type kvResponseWire struct {
	KVResponse
	Results []kvResultWire `json:"results"`
}

type txnResultWire struct {
	TxnResult
	Index *int `json:"index"`
}

type txnResponseWire struct {
	TxnResponse
	Results []txnResultWire `json:"results"`
}

// PushBatch is the body of one push, rendered item by item straight into a
// pooled buffer (bufpool): encoding/json would re-scan and compact every
// payload (most of the client's CPU on the produce path), and a list of
// PushItems rendered afterwards costs a second copy and a fresh body per
// push. Payloads are sent verbatim, so each must hold exactly one JSON
// value (envelope.Append's output always does); an empty one is sent as
// null. Client.PushBatch sends it and gives the buffer back.
type PushBatch struct {
	body []byte
	// refs are the payloads sent from the caller's memory instead of
	// copied into body, each in its place.
	refs  []bodyRef
	items int
	// answer is the most the push's answer may hold: one result per item,
	// echoing its queue and its transactionId.
	answer int64
	// head is the rendered start of the last item, up to its payload,
	// reused while the queue and partition repeat.
	head            []byte
	headQ, headPart string
}

// NewPushBatch starts a push whose body is expected to take about size
// bytes (a hint: the buffer grows past it).
func NewPushBatch(size int) *PushBatch {
	b := &PushBatch{body: bufpool.Get(size + 16), answer: answerSlack}
	b.body = append(b.body, `{"items":[`...)
	return b
}

// Len is the number of items added.
func (b *PushBatch) Len() int { return b.items }

// Size is the bytes of body rendered so far: what NewPushBatch's hint
// sizes, the payloads sent from the caller's memory not included.
func (b *PushBatch) Size() int { return len(b.body) }

// ItemBodyBytes is what Add writes into the body for one item, its
// payload counted only when it is copied (below minRefPayload): exact for
// names and keys JSON does not escape, and the sum over a push's items is
// the hint NewPushBatch wants. Sized by whole payloads instead, a push of
// 1 KiB records took a buffer ten times the bytes it wrote.
func ItemBodyBytes(queue, partition string, payload int, transactionID string) int {
	n := len(`,{"queue":"","payload":}`) + len(queue)
	if partition != "" {
		n += len(`,"partition":""`) + len(partition)
	}
	switch {
	case payload == 0:
		n += len("null")
	case payload < minRefPayload:
		n += payload
	}
	if transactionID != "" {
		n += len(`,"transactionId":""`) + len(transactionID)
	}
	return n
}

// minRefPayload is the smallest payload sent from the caller's memory
// (PushBatch.Add) rather than copied into the body: each is one more
// segment of the socket's vectored write.
const minRefPayload = 256

// Add appends one item; partition and transactionID may be empty (none).
// A payload of minRefPayload bytes or more is not copied: it is written
// to the socket from payload's own memory (a vectored write), so it must
// stay unchanged until Client.PushBatch has returned. Copying each
// envelope into the body was most of the produce path's memmove.
func (b *PushBatch) Add(queue, partition string, payload []byte, transactionID string) {
	need := len(payload) + len(transactionID) + 64
	if b.headQ != queue || b.headPart != partition || b.head == nil {
		b.headQ, b.headPart = queue, partition
		b.head = append(b.head[:0], `{"queue":`...)
		b.head = jsontext.AppendString(b.head, queue)
		if partition != "" {
			b.head = append(b.head, `,"partition":`...)
			b.head = jsontext.AppendString(b.head, partition)
		}
		b.head = append(b.head, `,"payload":`...)
	}
	need += len(b.head)
	if cap(b.body)-len(b.body) < need {
		// Grown through the pool, by doubling: a few copies per push.
		grown := append(bufpool.Get(max(2*cap(b.body), len(b.body)+need)), b.body...)
		bufpool.Put(b.body)
		b.body = grown
	}
	if b.items > 0 {
		b.body = append(b.body, ',')
	}
	b.body = append(b.body, b.head...)
	switch {
	case len(payload) == 0:
		b.body = append(b.body, "null"...)
	case len(payload) >= minRefPayload:
		b.refs = append(b.refs, bodyRef{at: len(b.body), p: payload})
	default:
		b.body = append(b.body, payload...)
	}
	if transactionID != "" {
		b.body = append(b.body, `,"transactionId":`...)
		b.body = jsontext.AppendString(b.body, transactionID)
	}
	b.body = append(b.body, '}')
	b.items++
	b.answer += pushResultFrame + int64(len(queue)+2*len(transactionID))
}

// pushBody renders items as one body (Push, and the tests of the body).
func pushBody(items []PushItem) *PushBatch {
	n := 16
	for i := range items {
		n += 64 + len(items[i].Queue) + len(items[i].Partition) + len(items[i].Payload) + len(items[i].TransactionID)
	}
	b := NewPushBatch(n)
	for i := range items {
		it := &items[i]
		b.Add(it.Queue, it.Partition, it.Payload, it.TransactionID)
	}
	return b
}

// Push stores items (§5). The results are returned in item order; a missing
// or repeated index, or a queued/duplicate item without an offset, is a
// KindProtocol error, never a silent success.
func (c *Client) Push(ctx context.Context, items []PushItem) ([]PushResult, error) {
	if len(items) == 0 {
		return nil, nil
	}
	return c.PushBatch(ctx, pushBody(items))
}

// PushBatch is Push of the items added to b, which is given back to the
// pool whatever the outcome: b may not be used afterwards. It returns once
// the transport has stopped reading the body (pooledBody.release), so the
// payloads Add referenced are the caller's again.
func (c *Client) PushBatch(ctx context.Context, b *PushBatch) ([]PushResult, error) {
	n := b.items
	if n == 0 {
		bufpool.Put(b.body)
		return nil, nil
	}
	body, limit := &pooledBody{buf: append(b.body, "]}"...), refs: b.refs}, b.answer
	*b = PushBatch{}
	var dec pushDecoder
	if err := c.call(ctx, routePush, "", c.timeout, limit, body, &dec); err != nil {
		return nil, err
	}
	raw := dec.results
	if len(raw) != n {
		return nil, protocolError(routePush, "%d results for %d items", len(raw), n)
	}
	out := make([]PushResult, n)
	seen := make([]bool, n)
	for i, w := range raw {
		if w.Index == nil {
			return nil, protocolError(routePush, "result %d carries no index", i)
		}
		r := w.PushResult
		r.Index = *w.Index
		if r.Index < 0 || r.Index >= n || seen[r.Index] {
			return nil, protocolError(routePush, "result index %d repeated or out of range", r.Index)
		}
		if r.Status == StatusQueued || r.Status == StatusDuplicate {
			if r.Offset == nil {
				return nil, protocolError(routePush, "item %d is %s without an offset", r.Index, r.Status)
			}
			if *r.Offset < 0 {
				return nil, protocolError(routePush, "item %d has negative offset %d", r.Index, *r.Offset)
			}
		}
		seen[r.Index] = true
		out[r.Index] = r
	}
	return out, nil
}

// Fetch reads records from absolute offsets (§6). The answer is checked to
// be aligned with the request (same count, same queue and partition per
// entry). At most MaxFetchEntries entries per call; the caller chunks.
func (c *Client) Fetch(ctx context.Context, req FetchRequest) ([]FetchResult, error) {
	if len(req.Entries) == 0 {
		return nil, nil
	}
	wait := req.MaxWaitMs
	if wait < 0 {
		wait = 0
	}
	if wait > MaxFetchWaitMs {
		wait = MaxFetchWaitMs
	}
	var dec fetchDecoder
	if err := c.call(ctx, routeFetch, "", c.timeout+time.Duration(wait)*time.Millisecond, fetchAnswerLimit(req), req, &dec); err != nil {
		return nil, err
	}
	out := dec.resp
	if len(out.Entries) != len(req.Entries) {
		return nil, protocolError(routeFetch, "%d results for %d entries", len(out.Entries), len(req.Entries))
	}
	for i, e := range out.Entries {
		if e.Queue != req.Entries[i].Queue || e.Partition != req.Entries[i].Partition {
			return nil, protocolError(routeFetch, "entry %d answers %s/%s for %s/%s", i, e.Queue, e.Partition, req.Entries[i].Queue, req.Entries[i].Partition)
		}
		// Records ascend from the first stored offset >= the requested one;
		// anything else would hand a consumer records twice or out of order.
		next := req.Entries[i].Offset
		for _, r := range e.Records {
			if r.Offset < next {
				return nil, protocolError(routeFetch, "entry %d record offset %d below %d", i, r.Offset, next)
			}
			next = r.Offset + 1
		}
	}
	return out.Entries, nil
}

// KV runs ops as one atomic call (§7). Results are returned in op order; a
// lost required precondition is a *PreconditionError; a misaligned answer
// is a KindProtocol error.
func (c *Client) KV(ctx context.Context, ops []KVOp) ([]KVResult, error) {
	if len(ops) == 0 {
		return nil, nil
	}
	var d kvDecoder
	if err := c.call(ctx, routeKV, "", c.timeout, maxKVAnswer, KVRequest{Operations: ops}, &d); err != nil {
		return nil, err
	}
	wire := d.wire
	out := wire.KVResponse
	if out.OK != nil && !*out.OK {
		pe := &PreconditionError{}
		if out.FailedIndex != nil {
			pe.Index = *out.FailedIndex
		}
		pe.KVReason, pe.Version, pe.Value = lostPrecondition(out.KVReason, out.Version, out.Value)
		return nil, pe
	}
	results := make([]KVResult, len(wire.Results))
	for i, w := range wire.Results {
		if w.Index == nil {
			return nil, protocolError(routeKV, "kv result %d carries no index", i)
		}
		results[i] = w.KVResult
		results[i].Index = *w.Index
	}
	return alignKV(routeKV, results, ops, func(r KVResult) int { return r.Index })
}

// lostPrecondition reads what a rolled-back call says of the required KV
// write it lost (§7.4, §8): the reason and the current version, "" and 0
// when absent, and the current value, nil when absent or null.
func lostPrecondition(reason *string, version *int64, value json.RawMessage) (kvReason string, v int64, val []byte) {
	if reason != nil {
		kvReason = *reason
	}
	if version != nil {
		v = *version
	}
	if isJSONNonNull(value) {
		val = value
	}
	return kvReason, v, val
}

// alignKV puts results in op order, refusing a missing, repeated or
// out-of-range position and a result whose op is not the one sent there.
func alignKV(route string, results []KVResult, ops []KVOp, pos func(KVResult) int) ([]KVResult, error) {
	n := len(ops)
	if len(results) != n {
		return nil, protocolError(route, "%d kv results for %d ops", len(results), n)
	}
	out := make([]KVResult, n)
	seen := make([]bool, n)
	for _, r := range results {
		i := pos(r)
		if i < 0 || i >= n || seen[i] {
			return nil, protocolError(route, "kv result index %d missing, repeated or out of range", i)
		}
		if !sameOp(ops[i].Op, r.Op) {
			return nil, protocolError(route, "kv result %d echoes op %q for %q", i, r.Op, ops[i].Op)
		}
		seen[i] = true
		out[i] = r
	}
	return out, nil
}

// sameOp: the echoed op of a putIfAbsent may be "putIfAbsent" or "put"
// (§7.4, unconfirmed); every other op is echoed by its own name.
func sameOp(sent, echoed string) bool {
	return sent == echoed || sent == OpPutIfAbsent && echoed == OpPut
}

// Transaction commits records and KV ops as one unit (§8). It returns the
// kv rider's results in rider order. A rollback is a *TxnError. The push
// echoes are checked: one success per item. The items' payloads are
// written to the socket from their own memory (TxnRequest.pooledBody), so
// they must stay unchanged until Transaction has returned.
func (c *Client) Transaction(ctx context.Context, req TxnRequest) ([]KVResult, error) {
	if len(req.Operations) == 0 && len(req.KV) == 0 {
		return nil, nil // §8: a transaction with nothing in it makes no call
	}
	if req.Operations == nil {
		req.Operations = []TxnOperation{}
	}
	if req.KV == nil {
		req.KV = []KVOp{}
	}
	items := 0
	for _, op := range req.Operations {
		if len(op.Items) == 0 {
			items++
		} else {
			items += len(op.Items)
		}
	}
	body, err := req.pooledBody()
	if err != nil {
		return nil, &Error{Kind: KindProtocol, Route: routeTxn, Message: Sanitize("encode: " + err.Error()), Err: err}
	}
	// Flat index space (§8): push echoes take 0..items-1, the kv rider
	// items+opIndex. The facade sends no acks or timers, so any other entry
	// is a broken answer. Each result is checked as it is decoded; the
	// first that breaks the answer is reported once the whole body decoded
	// (a body that does not decode is that error instead).
	pushSeen := make([]bool, items)
	kv := make([]KVResult, 0, len(req.KV))
	var broken error
	seen := 0
	check := func(i int, w *txnResultWire) error {
		if w.Index == nil {
			return protocolError(routeTxn, "result %d carries no index", i)
		}
		r := w.TxnResult
		r.Index = *w.Index
		switch r.Type {
		case "push":
			if r.Index < 0 || r.Index >= items || pushSeen[r.Index] {
				return protocolError(routeTxn, "push echo index %d repeated or out of range", r.Index)
			}
			if r.Success == nil || !*r.Success {
				return protocolError(routeTxn, "push echo %d not successful", r.Index)
			}
			pushSeen[r.Index] = true
		case "kv":
			if r.OpIndex == nil || r.Index != items+*r.OpIndex {
				return protocolError(routeTxn, "kv result at flat index %d does not match its opIndex", r.Index)
			}
			kv = append(kv, r.KVResult)
		default:
			return protocolError(routeTxn, "unexpected result type %q at index %d", r.Type, r.Index)
		}
		return nil
	}
	d := txnAnswerDecoder{
		restart: func() { clear(pushSeen); kv, broken, seen = kv[:0], nil, 0 },
		each: func(w *txnResultWire) {
			if broken == nil {
				broken = check(seen, w)
			}
			seen++
		},
	}
	if err := c.call(ctx, routeTxn, "", c.timeout, txnAnswerLimit(req), body, &d); err != nil {
		return nil, err
	}
	out := d.resp
	if !out.Success {
		te := &TxnError{Reason: out.Reason, Message: Sanitize(out.Error)}
		if out.FailedIndex != nil {
			te.KVIndex = *out.FailedIndex - items
			if te.KVIndex < 0 {
				te.KVIndex = 0
			}
		}
		te.KVReason, te.Version, te.Value = lostPrecondition(out.KVReason, out.Version, out.Value)
		return nil, te
	}
	if broken != nil {
		return nil, broken
	}
	for i, ok := range pushSeen {
		if !ok {
			return nil, protocolError(routeTxn, "no push echo for item %d", i)
		}
	}
	return alignKV(routeTxn, kv, req.KV, func(r KVResult) int { return *r.OpIndex })
}

// AuthMe asks which tenant the credential acts for (§9). It returns "" (and
// no error) when the answer names no tenant.
func (c *Client) AuthMe(ctx context.Context) (string, error) {
	var out struct {
		ActingCluster *struct {
			ID json.RawMessage `json:"id"`
		} `json:"acting_cluster"`
	}
	err := c.call(ctx, routeAuthMe, "", c.timeout, maxSmallAnswer, nil, &out)
	if err != nil {
		if KindOf(err) == KindProtocol { // a non-JSON or odd body names no tenant
			return "", nil
		}
		return "", err
	}
	if out.ActingCluster == nil {
		return "", nil
	}
	var id string
	if json.Unmarshal(out.ActingCluster.ID, &id) != nil {
		return "", nil
	}
	return validTenant(id), nil
}

func validTenant(id string) string {
	id = strings.TrimSpace(id)
	if len(id) < 1 || len(id) > 128 {
		return ""
	}
	for i := 0; i < len(id); i++ {
		if !plainByte(id[i]) && id[i] != ':' {
			return ""
		}
	}
	return id
}

func isJSONNonNull(r json.RawMessage) bool {
	return len(r) > 0 && string(r) != "null"
}
