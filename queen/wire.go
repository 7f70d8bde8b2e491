package queen

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/queen-mq/queen-kafka/internal/bufpool"
	"github.com/queen-mq/queen-kafka/internal/jsontext"
)

// Namespace is the KV namespace every facade row lives in (§10).
const Namespace = "queen-kafka"

// QueueInfo is one entry of GET /api/v1/resources/queues (§2). Only the
// fields the facade reads are decoded.
type QueueInfo struct {
	Name       string `json:"name"`
	ID         string `json:"id,omitempty"`
	Partitions int    `json:"partitions"`
}

// QueueList is the body of GET /api/v1/resources/queues.
type QueueList struct {
	Queues []QueueInfo `json:"queues"`
}

// ConfigureResult is the echo of POST /api/v1/configure (§3).
type ConfigureResult struct {
	Configured bool            `json:"configured"`
	Queue      string          `json:"queue,omitempty"`
	Namespace  string          `json:"namespace"`
	Task       string          `json:"task"`
	Options    json.RawMessage `json:"options,omitempty"`
	Error      json.RawMessage `json:"error,omitempty"`
}

// DeleteResult is the body of DELETE /api/v1/resources/queues/:queue (§4).
type DeleteResult struct {
	Deleted bool            `json:"deleted"`
	Existed bool            `json:"existed"`
	Message string          `json:"message,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

// PushItem is one item of POST /api/v1/push (§5). Partition is the Kafka
// partition index in decimal; TransactionID is the dedup key, set by the
// facade on records of idempotent and transactional batches only
// (producer.DedupKeys).
type PushItem struct {
	Queue         string          `json:"queue"`
	Partition     string          `json:"partition,omitempty"`
	Payload       json.RawMessage `json:"payload"`
	TransactionID string          `json:"transactionId,omitempty"`
}

// PushRequest is the body of POST /api/v1/push.
type PushRequest struct {
	Items []PushItem `json:"items"`
}

// Push item statuses (§5).
const (
	StatusQueued    = "queued"
	StatusDuplicate = "duplicate"
	StatusError     = "error"
	StatusBuffered  = "buffered"
	StatusFailed    = "failed"
)

// PushResult is one element of the 201 array of POST /api/v1/push. Offset is
// nil when the broker sent none (it must for queued and duplicate items).
type PushResult struct {
	Index         int    `json:"index"`
	MessageID     string `json:"message_id"`
	TransactionID string `json:"transaction_id"`
	QueueName     string `json:"queueName"`
	Status        string `json:"status"`
	Offset        *int64 `json:"offset,omitempty"`
}

// FetchEntry is one entry of POST /api/v1/fetch (§6).
type FetchEntry struct {
	Queue     string `json:"queue"`
	Partition string `json:"partition"`
	Offset    int64  `json:"offset"`
	MaxBytes  int    `json:"maxBytes,omitempty"`
}

// FetchRequest is the body of POST /api/v1/fetch.
type FetchRequest struct {
	Entries   []FetchEntry `json:"entries"`
	MaxWaitMs int          `json:"maxWaitMs"`
	MinBytes  int          `json:"minBytes"`
}

// appendJSON renders the body as encoding/json would, strings escaped as
// jsontext.AppendString does: a wide consumer's parked reads send 1,024 entries a
// call, and reflection was most of what encoding them cost.
func (r FetchRequest) appendJSON(b []byte) []byte {
	b = slices.Grow(b, 64+len(r.Entries)*64)
	b = append(b, `{"entries":`...)
	if r.Entries == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range r.Entries {
			e := &r.Entries[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"queue":`...)
			b = jsontext.AppendString(b, e.Queue)
			b = append(b, `,"partition":`...)
			b = jsontext.AppendString(b, e.Partition)
			b = append(b, `,"offset":`...)
			b = strconv.AppendInt(b, e.Offset, 10)
			if e.MaxBytes != 0 {
				b = append(b, `,"maxBytes":`...)
				b = strconv.AppendInt(b, int64(e.MaxBytes), 10)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"maxWaitMs":`...)
	b = strconv.AppendInt(b, int64(r.MaxWaitMs), 10)
	b = append(b, `,"minBytes":`...)
	b = strconv.AppendInt(b, int64(r.MinBytes), 10)
	return append(b, '}')
}

// FetchRecord is one stored record in a fetch answer. Payload is the JSON
// exactly as pushed ("null" for an empty stored payload); TS is the commit
// time in the §0 format.
type FetchRecord struct {
	Offset        int64           `json:"offset"`
	TransactionID string          `json:"transactionId"`
	Payload       json.RawMessage `json:"payload"`
	TS            string          `json:"ts"`
}

// Fetch result errors (§6).
const (
	FetchErrUnknownTopic = "UNKNOWN_TOPIC_OR_PARTITION"
	FetchErrOutOfRange   = "OFFSET_OUT_OF_RANGE"
)

// FetchResult is one entry of the fetch answer, aligned with the request.
type FetchResult struct {
	Queue          string        `json:"queue"`
	Partition      string        `json:"partition"`
	Records        []FetchRecord `json:"records"`
	HighWatermark  int64         `json:"highWatermark"`
	LogStartOffset int64         `json:"logStartOffset"`
	Error          string        `json:"error,omitempty"`
}

// FetchResponse is the 200 body of POST /api/v1/fetch.
type FetchResponse struct {
	Entries []FetchResult `json:"entries"`
}

// KV op names (§7.1).
const (
	OpPut         = "put"
	OpDelete      = "delete"
	OpGetMany     = "getMany"
	OpGetPrefix   = "getPrefix"
	OpGet         = "get"
	OpPutIfAbsent = "putIfAbsent"
	OpIncr        = "incr"
	OpCheck       = "check"
)

// KVOp is one operation of POST /api/v1/kv (§7.1). Expect is a pointer
// because 0 ("must be absent") differs from no precondition.
type KVOp struct {
	Op         string          `json:"op"`
	NS         string          `json:"ns"`
	Key        string          `json:"key,omitempty"`
	Value      json.RawMessage `json:"value,omitempty"`
	TTLSeconds int64           `json:"ttlSeconds,omitempty"`
	Forever    bool            `json:"forever,omitempty"`
	Expect     *int64          `json:"expect,omitempty"`
	Required   bool            `json:"required,omitempty"`
	Keys       []string        `json:"keys,omitempty"`
	Prefix     string          `json:"prefix,omitempty"`
	Limit      int             `json:"limit,omitempty"`
	After      string          `json:"after,omitempty"`
	KeysOnly   bool            `json:"keysOnly,omitempty"`
	Delta      *float64        `json:"delta,omitempty"`
	Min        *float64        `json:"min,omitempty"`
	Max        *float64        `json:"max,omitempty"`
}

// KVRequest is the facade's form of the POST /api/v1/kv body.
type KVRequest struct {
	Operations []KVOp `json:"operations"`
}

// KVRow is one row of a getMany/getPrefix result.
type KVRow struct {
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value,omitempty"`
	Version   int64           `json:"version"`
	ExpiresAt *string         `json:"expiresAt"`
	UpdatedAt string          `json:"updatedAt"`
}

// KVResult is one result of POST /api/v1/kv (§7.4), or a type:"kv" result of
// a transaction (§8, which adds OpIndex and Type).
type KVResult struct {
	Index     int             `json:"index"`
	OpIndex   *int            `json:"opIndex,omitempty"`
	Type      string          `json:"type,omitempty"`
	Op        string          `json:"op"`
	Applied   bool            `json:"applied,omitempty"`
	Key       string          `json:"key,omitempty"`
	Value     json.RawMessage `json:"value,omitempty"`
	Version   int64           `json:"version,omitempty"`
	Reason    string          `json:"reason,omitempty"`
	Rows      []KVRow         `json:"rows,omitempty"`
	Missing   []string        `json:"missing,omitempty"`
	Truncated bool            `json:"truncated,omitempty"`
	NextAfter *string         `json:"nextAfter,omitempty"`
	Found     *bool           `json:"found,omitempty"`
}

// NextCursor is the After of the page that follows a truncated getPrefix
// page: its last row's key, or the server's nextAfter when it skipped ahead
// over rows it did not return. ok is false when neither moves past after: a
// page that cannot be resumed.
func (r *KVResult) NextCursor(after string) (next string, ok bool) {
	switch {
	case len(r.Rows) > 0:
		return r.Rows[len(r.Rows)-1].Key, true
	case r.NextAfter != nil && *r.NextAfter > after:
		return *r.NextAfter, true
	}
	return "", false
}

// KV verdict reasons of a write that did not apply (§7.2).
const (
	ReasonExists  = "exists"
	ReasonAbsent  = "absent"
	ReasonVersion = "version"
)

// KVResponse is the 200 body of POST /api/v1/kv. A lost required
// precondition has OK == false and no Results (§7.4); the client turns that
// into a *PreconditionError.
type KVResponse struct {
	Results     []KVResult      `json:"results,omitempty"`
	OK          *bool           `json:"ok,omitempty"`
	Reason      string          `json:"reason,omitempty"`
	FailedIndex *int            `json:"failedIndex,omitempty"`
	KVReason    *string         `json:"kvReason,omitempty"`
	Version     *int64          `json:"version,omitempty"`
	Value       json.RawMessage `json:"value,omitempty"`
}

// TxnOperation is one element of a transaction's operations list (§8). The
// facade only sends push operations.
type TxnOperation struct {
	Type  string     `json:"type"`
	Items []PushItem `json:"items,omitempty"`
}

// TxnRequest is the body of POST /api/v1/transaction.
type TxnRequest struct {
	Operations []TxnOperation `json:"operations"`
	KV         []KVOp         `json:"kv"`
}

// TxnResult is one flat-indexed result of a committed transaction: a push
// echo, an ack, or a kv result (then the KVResult fields are set).
type TxnResult struct {
	KVResult
	Success       *bool  `json:"success,omitempty"`
	TransactionID string `json:"transactionId,omitempty"`
	MessageID     string `json:"messageId,omitempty"`
	QueueName     string `json:"queueName,omitempty"`
	Duplicate     bool   `json:"duplicate,omitempty"`
}

// TxnResponse is the 200 body of POST /api/v1/transaction, committed or
// rolled back (Success false; the client turns that into *TxnError).
type TxnResponse struct {
	TransactionID string          `json:"transactionId"`
	Success       bool            `json:"success"`
	Reason        string          `json:"reason,omitempty"`
	Error         string          `json:"error,omitempty"`
	Results       []TxnResult     `json:"results"`
	OK            *bool           `json:"ok,omitempty"`
	FailedIndex   *int            `json:"failedIndex,omitempty"`
	KVReason      *string         `json:"kvReason,omitempty"`
	Version       *int64          `json:"version,omitempty"`
	Value         json.RawMessage `json:"value,omitempty"`
}

// appendJSON renders the transaction body without reflection: each push
// payload, an envelope the caller built as JSON, is copied as it is, where
// encoding/json would validate and compact every one of them again (a
// fifth of a large commit's CPU). The kv rider, a few small ops, goes
// through encoding/json, without HTML escaping as encodeBody's.
func (r TxnRequest) appendJSONErr(dst []byte) ([]byte, error) {
	body, err := r.render(dst, false)
	return body.buf, err
}

// pooledBody is the body for the call: its framing in a pooled buffer and
// every payload of minRefPayload bytes or more written from the caller's
// memory (as PushBatch's): a commit of tens of megabytes is neither copied
// into a body of its size nor held twice.
func (r TxnRequest) pooledBody() (*pooledBody, error) {
	n := 256
	for _, op := range r.Operations {
		for _, it := range op.Items {
			n += ItemBodyBytes(it.Queue, it.Partition, len(it.Payload), it.TransactionID)
		}
	}
	p, err := r.render(bufpool.Get(n), true)
	if err != nil {
		bufpool.Put(p.buf)
		return nil, err
	}
	return p, nil
}

// render appends the body to dst; with refs, payloads of minRefPayload
// bytes or more are referenced in place rather than copied.
func (r TxnRequest) render(dst []byte, refs bool) (*pooledBody, error) {
	if dst == nil {
		n := 64
		for _, op := range r.Operations {
			for _, it := range op.Items {
				n += len(it.Queue) + len(it.Partition) + len(it.Payload) + len(it.TransactionID) + 64
			}
		}
		dst = make([]byte, 0, n)
	}
	p := &pooledBody{}
	dst = append(dst, `{"operations":[`...)
	for i, op := range r.Operations {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"type":`...)
		dst = jsontext.AppendString(dst, op.Type)
		if len(op.Items) > 0 {
			dst = append(dst, `,"items":[`...)
			for j, it := range op.Items {
				if j > 0 {
					dst = append(dst, ',')
				}
				dst = append(dst, `{"queue":`...)
				dst = jsontext.AppendString(dst, it.Queue)
				if it.Partition != "" {
					dst = append(dst, `,"partition":`...)
					dst = jsontext.AppendString(dst, it.Partition)
				}
				dst = append(dst, `,"payload":`...)
				switch {
				case len(it.Payload) == 0:
					dst = append(dst, "null"...)
				case refs && len(it.Payload) >= minRefPayload:
					p.refs = append(p.refs, bodyRef{at: len(dst), p: it.Payload})
				default:
					dst = append(dst, it.Payload...)
				}
				if it.TransactionID != "" {
					dst = append(dst, `,"transactionId":`...)
					dst = jsontext.AppendString(dst, it.TransactionID)
				}
				dst = append(dst, '}')
			}
			dst = append(dst, ']')
		}
		dst = append(dst, '}')
	}
	dst = append(dst, `],"kv":`...)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	kv := r.KV
	if kv == nil {
		kv = []KVOp{}
	}
	if err := enc.Encode(kv); err != nil {
		p.buf = dst
		return p, err
	}
	dst = append(dst, bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})...)
	p.buf = append(dst, '}')
	return p, nil
}
