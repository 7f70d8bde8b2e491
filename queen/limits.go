package queen

import (
	"fmt"
	"io"

	"github.com/queen-mq/queen-kafka/internal/bufpool"
)

// Every answer body is read through a limit: the most the contract lets that
// route answer, derived where it can be from the request itself, plus slack.
// A 2xx body past its limit is a broken answer (KindProtocol) and is not
// read further; an error body is only ever logged or copied cut to 256
// characters (§0.1), so it is read up to maxErrorBody and the rest dropped.
const (
	// maxErrorBody bounds what is read of a non-2xx body.
	maxErrorBody = 64 << 10
	// answerSlack covers JSON framing the contract does not count.
	answerSlack = 1 << 20
	// maxFetchRendered is §6's cap on a fetch answer's rendered body. The
	// server checks it before each record, so a body just short of it may
	// still take one more whole record.
	maxFetchRendered = 64 << 20
	// maxRecordRendered bounds that one record: it was pushed in one
	// request, which QUEEN_MAX_BODY_BYTES (default 64 MiB, §0) caps.
	maxRecordRendered = 64 << 20
	// fetchEntryFrame is what one fetch result costs besides its records
	// and its queue and partition echo: field names, the two bounds,
	// an error code.
	fetchEntryFrame = 256
	// fetchRecordFrame is one record's JSON besides its payload: offset,
	// ts and punctuation; the one record delivered past the budgets may
	// also carry a transactionId of up to 65,535 bytes (§5).
	fetchRecordFrame = 96 + 65535
	// pushResultFrame is one push result besides its queue and
	// transactionId echoes: index, message_id, status, offset, names.
	pushResultFrame = 512
	// maxKVAnswer is §7.3's read budget (4 MiB of values) plus the row
	// that crosses it (a value is at most 64 KiB) and 4,096 keys (the
	// store's own ceiling) of 512 bytes, each escaped at worst six-fold.
	maxKVAnswer = 4<<20 + 64<<10 + 4096*512*6
	// maxTxnKVAnswer is §8's kv rider at its most: 256 keys read, each
	// value at most 64 KiB, each key at most 512 bytes escaped six-fold.
	maxTxnKVAnswer = 256 * (64<<10 + 512*6)
	// maxSmallAnswer is the ceiling of the routes whose answer the
	// contract does not size and that carry one small object
	// (configure, delete, /auth/me).
	maxSmallAnswer = 1 << 20
	// maxQueuesAnswer is the ceiling of the queue list, which the
	// contract does not size: 16 MiB is some 40,000 queues.
	maxQueuesAnswer = 16 << 20
)

// fetchAnswerLimit is the most a fetch answer for req may hold. §6 caps the
// rendered body at 64 MiB, but checks the cap before each record, not after:
// a body one byte short of it still takes the next record whole, and that
// record was pushed in a body of at most QUEEN_MAX_BODY_BYTES (64 MiB). So
// the records are at most the cap plus one whole record and its framing,
// whatever the entries ask for (a small maxBytes cannot tighten this: the
// first record of a call ignores it); each result also echoes its queue and
// partition. Refusing less would refuse a legitimate answer, and the
// consumer, retrying the same offsets, would never get past it.
func fetchAnswerLimit(req FetchRequest) int64 {
	n := int64(answerSlack) + maxFetchRendered + maxRecordRendered + fetchRecordFrame
	for i := range req.Entries {
		n += fetchEntryFrame + int64(len(req.Entries[i].Queue)+len(req.Entries[i].Partition))
	}
	return n
}

// txnAnswerLimit is the most a transaction answer for req may hold: one push
// echo per item and the kv rider's results.
func txnAnswerLimit(req TxnRequest) int64 {
	n := int64(answerSlack) + maxTxnKVAnswer
	for _, op := range req.Operations {
		n += pushResultFrame * int64(max(len(op.Items), 1))
	}
	return n
}

// readAnswer reads body, at most limit bytes. ok is false when the body
// holds more, which is then not read further.
func readAnswer(body io.Reader, limit int64) (raw []byte, ok bool, err error) {
	raw, err = io.ReadAll(io.LimitReader(body, limit+1))
	if int64(len(raw)) > limit {
		return raw[:limit], false, err
	}
	return raw, true, err
}

// readPooledAnswer is readAnswer into a bufpool buffer, sized by the
// declared length when there is one; the caller gives raw back.
func readPooledAnswer(body io.Reader, declared, limit int64) (raw []byte, ok bool, err error) {
	raw = bufpool.Get(int(min(max(declared+1, 4<<10), limit+1)))
	for {
		if len(raw) == cap(raw) {
			grown := append(bufpool.Get(int(min(2*int64(cap(raw)), limit+1))), raw...)
			bufpool.Put(raw)
			raw = grown
		}
		n := min(int64(cap(raw)), limit+1)
		m, rerr := body.Read(raw[len(raw):n])
		raw = raw[:len(raw)+m]
		if int64(len(raw)) > limit {
			return raw[:limit], false, nil
		}
		if rerr == io.EOF {
			return raw, true, nil
		}
		if rerr != nil {
			return raw, true, rerr
		}
	}
}

func tooLongError(route string, status int, limit int64) error {
	return &Error{Kind: KindProtocol, Route: route, Status: status, Message: fmt.Sprintf("answer longer than %d bytes", limit)}
}
