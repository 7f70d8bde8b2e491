package dev

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/cockroachdb/pebble/v2"
)

// A batch value holds the records one request stored in one partition:
//
//	u8 version (1) | varint ts | uvarint n |
//	n × (uvarint len, message id | uvarint len, transactionId | uvarint len, payload) |
//	u32 little-endian CRC-32C of everything before it
//
// Every record of a batch has the batch's commit time. The checksum makes
// a damaged value one that is refused rather than read as other records
// (pebble checksums its blocks, but a value is ours to trust or not); the
// decoder checks every length against what is left, so no value, however
// damaged, makes it index out of range or allocate more than the value's
// own size.
const batchVersion = 1

var (
	crcTable      = crc32.MakeTable(crc32.Castagnoli)
	errBadBatch   = errors.New("damaged record batch")
	errBadVersion = errors.New("record batch of an unknown version")
)

// maxBatchValue bounds the payload bytes of one batch value (a larger
// group of records is split at record boundaries; a record larger than it
// is a value alone): a read from an offset decodes the value holding it,
// so the bound keeps a fetch's memory and work per entry small whatever
// a push held (500 records of 1 KiB to one partition are 8 values).
const maxBatchValue = 64 << 10

// batchEnd is where the value starting at recs[from] ends.
func batchEnd(recs []record, from int) int {
	n := len(recs[from].payload)
	to := from + 1
	for ; to < len(recs) && n+len(recs[to].payload) <= maxBatchValue; to++ {
		n += len(recs[to].payload)
	}
	return to
}

// batchValueSize is the exact length of appendBatchValue's output, so that
// the value can be encoded straight into the engine's batch.
func batchValueSize(ts int64, recs []record) int {
	var tmp [binary.MaxVarintLen64]byte
	n := 1 + binary.PutVarint(tmp[:], ts) + uvarintLen(uint64(len(recs))) + 4
	for i := range recs {
		r := &recs[i]
		n += uvarintLen(uint64(len(r.msgID))) + len(r.msgID)
		n += uvarintLen(uint64(len(r.txID))) + len(r.txID)
		n += uvarintLen(uint64(len(r.payload))) + len(r.payload)
	}
	return n
}

func uvarintLen(v uint64) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}

// appendBatchValue appends the value of a batch of recs, all stored at ts.
func appendBatchValue(dst []byte, ts int64, recs []record) []byte {
	start := len(dst)
	e := encoder{b: append(dst, batchVersion)}
	e.varint(ts)
	e.uvarint(uint64(len(recs)))
	for i := range recs {
		r := &recs[i]
		e.str(r.msgID)
		e.str(r.txID)
		e.uvarint(uint64(len(r.payload)))
		e.b = append(e.b, r.payload...)
	}
	return binary.LittleEndian.AppendUint32(e.b, crc32.Checksum(e.b[start:], crcTable))
}

// decodeBatch appends the records of batch value v to dst (reused by the
// caller: no allocation per batch once it has grown) and returns them with
// the batch's commit time. The records alias v.
func decodeBatch(dst []recordView, v []byte) ([]recordView, int64, error) {
	if len(v) < 1+1+1+4 {
		return dst, 0, errBadBatch
	}
	body := v[:len(v)-4]
	if crc32.Checksum(body, crcTable) != binary.LittleEndian.Uint32(v[len(v)-4:]) {
		return dst, 0, errBadBatch
	}
	if body[0] != batchVersion {
		return dst, 0, errBadVersion
	}
	d := &decoder{b: body[1:]}
	ts := d.varint()
	n := d.uvarint()
	// Each record takes at least three bytes: a count beyond that is damage.
	if d.err != nil || n > uint64(len(d.b)/3) {
		return dst, 0, errBadBatch
	}
	for range n {
		r := recordView{ts: ts, msgID: d.raw(), txID: d.raw(), payload: d.raw()}
		if d.err != nil {
			return dst, 0, errBadBatch
		}
		dst = append(dst, r)
	}
	if len(d.b) != 0 {
		return dst, 0, errBadBatch
	}
	return dst, ts, nil
}

// recordIter walks one partition's records in offset order, from an
// offset up to (not including) a high watermark, over the batches that
// hold them. It is how every reader of records reads them:
//
//	ri := b.records(qid, part, from, hwm)
//	defer ri.close()
//	for off, rec, ok := ri.next(); ok; off, rec, ok = ri.next() { … }
//	if err := ri.err(); err != nil { … }
//
// A record returned aliases the engine's buffer: it is valid until the
// next call of next.
type recordIter struct {
	it       *pebble.Iterator
	own      bool // close it.Close() with the walk
	prefix   []byte
	key      []byte
	from     int64
	hwm      int64
	recs     []recordView
	base     int64 // offset of recs[0]
	i        int
	done     bool
	failed   error
	partName string
}

// records opens a walk of part's records from `from` to hwm on the
// database as it is now.
func (b *Broker) records(qid, part string, from, hwm int64) *recordIter {
	return readRecords(b.db, qid, part, from, hwm)
}

// readRecords is records on reader r (the database or a batch).
func readRecords(r pebble.Reader, qid, part string, from, hwm int64) *recordIter {
	prefix := keyPrefix(kindBatch, qid, part)
	ri := &recordIter{own: true}
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		ri.failed, ri.done = err, true
		return ri
	}
	ri.it = it
	ri.seek(qid, part, from, hwm)
	return ri
}

// iterOn makes a walk on an iterator over the batch kind's keys that the
// caller owns and may share between partitions (seek starts each).
func iterOn(it *pebble.Iterator) *recordIter { return &recordIter{it: it} }

// seek starts the walk over part's records from `from` to hwm.
func (ri *recordIter) seek(qid, part string, from, hwm int64) {
	ri.prefix = appendLP(appendLP(append(ri.prefix[:0], kindBatch), qid), part)
	ri.partName = part
	ri.from, ri.hwm = from, hwm
	ri.recs, ri.i, ri.done, ri.failed = ri.recs[:0], 0, false, nil
	if from >= hwm {
		ri.done = true
		return
	}
	// The batch holding `from` is the last one filed at or below it.
	ri.key = appendOffset(append(ri.key[:0], ri.prefix...), from+1)
	ok := ri.it.SeekLT(ri.key)
	if !ok || !ri.inPrefix() {
		ri.key = appendOffset(ri.key[:len(ri.prefix)], from)
		ok = ri.it.SeekGE(ri.key)
	}
	ri.load(ok)
}

func (ri *recordIter) inPrefix() bool {
	k := ri.it.Key()
	return len(k) == len(ri.prefix)+8 && string(k[:len(ri.prefix)]) == string(ri.prefix)
}

// load decodes the batch the iterator is on (ok: it is on one).
func (ri *recordIter) load(ok bool) {
	ri.recs, ri.i = ri.recs[:0], 0
	if !ok || !ri.inPrefix() {
		ri.done = true
		ri.failed = ri.it.Error()
		return
	}
	ri.base = offsetOf(ri.it.Key())
	if ri.base >= ri.hwm {
		ri.done = true
		return
	}
	v, err := ri.it.ValueAndErr()
	if err == nil {
		ri.recs, _, err = decodeBatch(ri.recs, v)
	}
	if err != nil {
		ri.done = true
		ri.failed = fmt.Errorf("records of %q from %d: %w", ri.partName, ri.base, err)
	}
}

// next returns the next record and its offset; ok false at the end (or on
// an error: see err).
func (ri *recordIter) next() (off int64, rec *recordView, ok bool) {
	for !ri.done {
		if ri.i < len(ri.recs) {
			off = ri.base + int64(ri.i)
			if off >= ri.hwm {
				ri.done = true
				break
			}
			rec = &ri.recs[ri.i]
			ri.i++
			if off < ri.from {
				continue
			}
			return off, rec, true
		}
		ri.load(ri.it.Next())
	}
	return 0, nil, false
}

// err is what ended the walk early, if anything did.
func (ri *recordIter) err() error { return ri.failed }

// close ends the walk (and closes its iterator if it opened it).
func (ri *recordIter) close() error {
	if ri.own && ri.it != nil {
		err := ri.it.Close()
		ri.it = nil
		return errors.Join(ri.failed, err)
	}
	return ri.failed
}
