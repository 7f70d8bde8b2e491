package txn

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/queen-mq/queen-kafka/internal/jsontext"
	"github.com/queen-mq/queen-kafka/queen"
)

// The r: rows of a staged batch. A row's value is
//
//	{"q":<topic>,"p":<partition>[,"b":<bytes>],"n":<rows>,"d":[[<dedup key>,<envelope>],…]}
//
// whole records as JSON text, as many as fit a value (issue 23): the
// commit pastes each envelope into its Queen transaction as read, with no
// decoding. Rows written by the builds before (and by this one for a batch
// with a record too large for a value) carry "d" as a string instead, the
// base64 of the same array's text cut anywhere (stageChunkBytes a row);
// the reader takes both, a batch in one form. A node of the older build
// cannot read the array form (encoding/json refuses an array for its
// []byte): its commit of such a stage fails and is retried, so it
// commits nothing of it, and lands once an updated node owns the id.

// stageValueMax is §7.3's value ceiling, 65,536 bytes serialized.
const stageValueMax = 65536

// serializedBound bounds what a broker's re-serialization can make of the
// compact JSON text b: a PostgreSQL jsonb prints a space after every ','
// and ':' between tokens, and only ever shortens the escapes in strings;
// counting those bytes in strings too keeps it an upper bound.
func serializedBound(b []byte) int {
	return len(b) + bytes.Count(b, []byte{','}) + bytes.Count(b, []byte{':'})
}

// stageRowHead is a row's value up to its array: topic, partition, the
// batch's bytes (bytes >= 0; the first row only) and the rows of the batch.
func stageRowHead(dst []byte, topic string, partition int32, bytes int64, rows int) []byte {
	dst = append(dst, `{"q":`...)
	dst = jsontext.AppendString(dst, topic)
	dst = append(dst, `,"p":`...)
	dst = strconv.AppendInt(dst, int64(partition), 10)
	if bytes > 0 {
		dst = append(dst, `,"b":`...)
		dst = strconv.AppendInt(dst, bytes, 10)
	}
	dst = append(dst, `,"n":`...)
	dst = strconv.AppendInt(dst, int64(rows), 10)
	return append(dst, `,"d":[`...)
}

// maxStageRows is how many rows one batch may take (their key's four
// digits).
const maxStageRows = 9999

// stageRowKeyBase is the key of batch b's rows under prefix, but the row
// number.
func stageRowKeyBase(prefix string, b *Batch) (string, error) {
	base := prefix + "r:" + queen.Esc(b.Topic) + ":" + strconv.FormatInt(int64(b.Partition), 10) + ":" + fmt.Sprintf("%010d", uint32(b.FirstSeq)) + ":"
	if len(base)+4 > queen.MaxKeyBytes {
		return "", fmt.Errorf("the transactional id and topic are too long for a stage key")
	}
	return base, nil
}

// stageRowKey is the key of row c of the batch whose rows are named base.
func stageRowKey(base string, c int) string { return base + fmt.Sprintf("%04d", c) }

// recordRows is the r: rows of batch b under prefix: its records as
// [dedup key, envelope] pairs (the key "" without one), whole records to
// a row, each row's serializedBound within stageValueMax. A batch with a
// record too large for a row is written in the base64 form
// (base64RecordRows), which cuts anywhere.
func recordRows(prefix string, b *Batch, ttl int64) ([]queen.KVOp, error) {
	base, err := stageRowKeyBase(prefix, b)
	if err != nil {
		return nil, err
	}
	// The keys' JSON text, one after another; the pairs are rendered
	// once, into their rows.
	keys := make([]byte, 0, 24*len(b.Payloads))
	keyEnds := make([]int, len(b.Payloads))
	for i := range b.Payloads {
		key := ""
		if b.Keys != nil {
			key = b.Keys[i]
		}
		keys = jsontext.AppendString(keys, key)
		keyEnds[i] = len(keys)
	}
	keyText := func(i int) []byte {
		if i == 0 {
			return keys[:keyEnds[0]]
		}
		return keys[keyEnds[i-1]:keyEnds[i]]
	}
	// The room for pairs in a row: the longest head any row of the batch
	// has, and the closing "]}".
	room := stageValueMax - serializedBound(stageRowHead(nil, b.Topic, b.Partition, max(b.Bytes, 1), maxStageRows)) - 2
	type cut struct{ first, size int } // a row's first record and its pairs' bytes
	var cuts []cut
	used := room
	for i, p := range b.Payloads {
		k := keyText(i)
		// [key,payload] is its bytes and 3, and a jsonb's space after its
		// inner ','; then its ",", printed ", ".
		cost := serializedBound(k) + serializedBound(p) + 4 + 2
		switch {
		case cost > room:
			return base64RecordRows(prefix, b, ttl)
		case used+cost > room:
			cuts, used = append(cuts, cut{first: i}), 0
		}
		used += cost
		cuts[len(cuts)-1].size += len(k) + len(p) + 4
	}
	if len(cuts) == 0 {
		cuts = []cut{{}} // an empty batch: one row, "d":[]
	}
	if len(cuts) > maxStageRows {
		return nil, fmt.Errorf("a batch of %d records is too large to stage", len(b.Payloads))
	}
	ops := make([]queen.KVOp, 0, len(cuts))
	for c, row := range cuts {
		last := len(b.Payloads)
		if c+1 < len(cuts) {
			last = cuts[c+1].first
		}
		bytes := int64(0)
		if c == 0 {
			bytes = b.Bytes
		}
		val := stageRowHead(make([]byte, 0, 64+len(b.Topic)+row.size+2), b.Topic, b.Partition, bytes, len(cuts))
		for i := row.first; i < last; i++ {
			if i > row.first {
				val = append(val, ',')
			}
			val = append(append(append(val, '['), keyText(i)...), ',')
			val = append(append(val, b.Payloads[i]...), ']')
		}
		val = append(val, ']', '}')
		ops = append(ops, queen.KVOp{Op: queen.OpPut, NS: queen.Namespace, Key: stageRowKey(base, c), Value: val, TTLSeconds: ttl})
	}
	return ops, nil
}

// base64RecordRows is the older form of the r: rows: the batch's records
// as one JSON array text [[<dedup key>,<envelope>],…], base64 in "d", cut
// into chunks of stageChunkBytes. It is what a batch with a record larger
// than a row's room is written as, and what the builds before wrote.
func base64RecordRows(prefix string, b *Batch, ttl int64) ([]queen.KVOp, error) {
	base, err := stageRowKeyBase(prefix, b)
	if err != nil {
		return nil, err
	}
	n := 2
	for _, p := range b.Payloads {
		n += len(p) + 32 // the pair's framing and a dedup key
	}
	array := make([]byte, 0, n)
	array = append(array, '[')
	for i, p := range b.Payloads {
		if i > 0 {
			array = append(array, ',')
		}
		key := ""
		if b.Keys != nil {
			key = b.Keys[i]
		}
		array = jsontext.AppendString(append(array, '['), key)
		array = append(append(array, ','), p...)
		array = append(array, ']')
	}
	array = append(array, ']')
	chunks := (len(array) + stageChunkBytes - 1) / stageChunkBytes
	if chunks > maxStageRows {
		return nil, fmt.Errorf("a batch of %d bytes is too large to stage", len(array))
	}
	ops := make([]queen.KVOp, 0, chunks)
	for c := 0; c < chunks; c++ {
		v := base64Records{Topic: b.Topic, Partition: b.Partition, Chunks: chunks, Data: array[c*stageChunkBytes : min(len(array), (c+1)*stageChunkBytes)]}
		if c == 0 {
			v.Bytes = b.Bytes
		}
		val, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		ops = append(ops, queen.KVOp{Op: queen.OpPut, NS: queen.Namespace, Key: stageRowKey(base, c), Value: val, TTLSeconds: ttl})
	}
	return ops, nil
}

// base64Records is the value of an r: row of the base64 form, as
// json.Marshal writes it.
type base64Records struct {
	Topic     string `json:"q"`
	Partition int32  `json:"p"`
	Bytes     int64  `json:"b,omitempty"`
	Chunks    int    `json:"n"`
	Data      []byte `json:"d"`
}
