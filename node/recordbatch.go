package node

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen"
)

// RecordBatch v2 layout: the fixed header before the records, where the
// Length field and the CRC sit, and the bytes the CRC covers (attributes
// onward) — the layout kmsg.RecordBatch reads and writes.
const (
	batchHeaderLen    = 61
	batchLengthOffset = 8
	batchMagicOffset  = 16
	batchCRCOffset    = 17
	batchCRCFrom      = 21
	batchLengthBase   = 12 // FirstOffset and Length precede what Length counts
)

// RecordBatch attribute bits.
const (
	attrCodecMask     = 0x07
	attrLogAppendTime = 0x08
	attrTransactional = 0x10
	attrControl       = 0x20
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// batchFault is a produce batch refused with a Kafka error code; msg is the
// reason, for the log and the v8+ error_message.
type batchFault struct {
	code int16
	msg  string
}

func (f *batchFault) Error() string { return f.msg }

func faultf(code int16, format string, args ...any) *batchFault {
	return &batchFault{code: code, msg: fmt.Sprintf(format, args...)}
}

// parseProduceBatch reads one produce partition's records into rb. Produce v3
// and up must carry exactly one RecordBatch v2 (Apache Kafka's
// ProduceRequest.validateRecords: INVALID_RECORD otherwise); its CRC-32C must
// match (CORRUPT_MESSAGE, as LogValidator's ensureValid answers). rb.Records
// aliases raw.
func parseProduceBatch(raw []byte, rb *kmsg.RecordBatch) *batchFault {
	if len(raw) == 0 {
		return faultf(kerr.InvalidRecord.Code, "produce requests must have at least one record batch per partition")
	}
	if len(raw) <= batchMagicOffset {
		return faultf(kerr.CorruptMessage.Code, "record batch truncated at %d bytes", len(raw))
	}
	if magic := int8(raw[batchMagicOffset]); magic != 2 {
		return faultf(kerr.InvalidRecord.Code, "produce requests are only allowed to contain record batches with magic version 2, got %d", magic)
	}
	if len(raw) < batchHeaderLen {
		return faultf(kerr.CorruptMessage.Code, "record batch truncated at %d bytes", len(raw))
	}
	length := int64(int32(binary.BigEndian.Uint32(raw[batchLengthOffset:])))
	end := batchLengthBase + length
	if end < batchHeaderLen || end > int64(len(raw)) {
		return faultf(kerr.CorruptMessage.Code, "record batch declares %d bytes, %d present", length, len(raw)-batchLengthBase)
	}
	if end != int64(len(raw)) {
		return faultf(kerr.InvalidRecord.Code, "produce requests are only allowed to contain exactly one record batch per partition")
	}
	want := binary.BigEndian.Uint32(raw[batchCRCOffset:])
	if got := crc32.Checksum(raw[batchCRCFrom:], crc32c); got != want {
		return faultf(kerr.CorruptMessage.Code, "record batch CRC is %08x, computed %08x", want, got)
	}
	if err := rb.ReadFrom(raw); err != nil {
		return faultf(kerr.CorruptMessage.Code, "record batch: %v", err)
	}
	if rb.Attributes&attrControl != 0 {
		return faultf(kerr.InvalidRecord.Code, "clients are not allowed to write control records")
	}
	if c := rb.Attributes & attrCodecMask; c > codecZstd {
		return faultf(kerr.CorruptMessage.Code, "unknown compression codec %d", c)
	}
	if rb.NumRecords < 0 {
		return faultf(kerr.CorruptMessage.Code, "record batch declares %d records", rb.NumRecords)
	}
	return nil
}

// batchDecoder turns a parsed produce batch into payload envelopes. It owns
// the reusable state of that walk (decompression buffer, record, header
// scratch), so a decoder is used by one request at a time; take one from
// batchDecoders.
type batchDecoder struct {
	scratch []byte
	// out holds a request's envelopes until its push has returned; kept
	// across requests so that the buffer is not regrown (in 1.25x steps,
	// each a full copy) for every request.
	out  []byte
	rec  kmsg.Record
	hdrs []queen.Header

	// claim pays for the scratch buffer's growth and for the records'
	// cost on the process-wide decodeBudget; nil pays nothing (a caller
	// that is not a produce request). recordCost is what the current
	// request's records have cost so far, against maxRecordCost.
	claim      *decodeClaim
	recordCost int
	// topicLen is the current batch's topic name length, which every one
	// of its push items repeats.
	topicLen int
}

// faultBudgetBusy is returned by envelopes when the claim could not grow
// without waiting; the caller gives back its budget and decodes again.
var faultBudgetBusy = &batchFault{code: kerr.MessageTooLarge.Code, msg: "decode budget busy"}

var batchDecoders = sync.Pool{New: func() any { return new(batchDecoder) }}

// scratchKeep is the largest decompression buffer a pooled decoder keeps.
const scratchKeep = 4 << 20

func (d *batchDecoder) release() {
	if cap(d.scratch) > scratchKeep {
		d.scratch = nil
	}
	if cap(d.out) > scratchKeep {
		d.out = nil
	}
	d.out = d.out[:0]
	d.claim, d.recordCost, d.topicLen = nil, 0, 0
	d.rec = kmsg.Record{Headers: d.rec.Headers[:0]}
	clear(d.hdrs)
	d.hdrs = d.hdrs[:0]
	batchDecoders.Put(d)
}

// envelopes appends one payload envelope per record of rb to buf and the end
// of each envelope to ends. allowance is how many decompressed bytes the
// request may still spend; the batch's spend is returned. Every record must
// be present and in offset order; a timestamp is the batch's first timestamp
// plus the record's delta, or none under LogAppendTime (Queen's append time
// then stands in, as it does on the way out).
func (d *batchDecoder) envelopes(rb *kmsg.RecordBatch, buf []byte, ends []int, allowance int) ([]byte, []int, int, *batchFault) {
	body := rb.Records
	spent := 0
	pay := freeGrowth
	if d.claim != nil {
		pay = d.claim.payScratch
	}
	if c := int(rb.Attributes & attrCodecMask); c != codecNone {
		var err error
		if err = pay(cap(d.scratch)); err == nil {
			d.scratch, err = codecs.decompress(d.scratch[:0], body, c, allowance, pay)
		}
		switch {
		case err == errBudgetBusy:
			return buf, ends, 0, faultBudgetBusy
		case err == errDecompressedTooLarge:
			return buf, ends, 0, faultf(kerr.MessageTooLarge.Code, "record batch decompresses past the %d byte request ceiling", maxDecompressed)
		case err != nil:
			return buf, ends, 0, faultf(kerr.CorruptMessage.Code, "record batch does not decompress: %v", err)
		}
		body, spent = d.scratch, len(d.scratch)
	}
	// An envelope is the record's key and value in base64 (4/3) plus a few
	// dozen bytes of framing: growing once up front saves the copies of
	// append's incremental growth. The record count is the client's claim,
	// so it counts only as far as the body could hold that many records,
	// and the estimate only as far as the request's record cost may go.
	// The estimate is paid for before it is allocated; the records' cost
	// is then paid in steps past it, not per record, to keep the budget's
	// lock off the hot path. A refused batch takes its payments back.
	est := min(len(body)/3*4+min(max(int(rb.NumRecords), 0), len(body))*48, maxRecordCost-d.recordCost)
	cost, paid := 0, 0
	payRecords := func(upTo int) *batchFault {
		if d.claim != nil && upTo > paid {
			err := d.claim.payRecords(upTo - paid)
			paid = upTo
			if err != nil {
				return faultBudgetBusy
			}
		}
		return nil
	}
	start, startEnds, startCost := len(buf), len(ends), d.recordCost
	fail := func(f *batchFault) ([]byte, []int, int, *batchFault) {
		d.recordCost = startCost
		if d.claim != nil {
			d.claim.records -= int64(paid)
		}
		return buf[:start], ends[:startEnds], 0, f
	}
	if f := payRecords(est); f != nil {
		return fail(f)
	}
	buf = slices.Grow(buf, est)
	logAppend := rb.Attributes&attrLogAppendTime != 0
	for i := int32(0); i < rb.NumRecords; i++ {
		l, n := binary.Varint(body)
		if n <= 0 || l < 0 || l > int64(len(body)-n) {
			return fail(faultf(kerr.CorruptMessage.Code, "record %d of %d: bad length", i, rb.NumRecords))
		}
		size := n + int(l)
		if err := d.rec.UnsafeReadFrom(body[:size]); err != nil {
			return fail(faultf(kerr.CorruptMessage.Code, "record %d of %d: %v", i, rb.NumRecords, err))
		}
		body = body[size:]
		if d.rec.OffsetDelta != i {
			return fail(faultf(kerr.InvalidRecord.Code, "record %d carries offset delta %d: inner offsets not in sequence", i, d.rec.OffsetDelta))
		}
		r := queen.Record{Key: d.rec.Key, Value: d.rec.Value, Timestamp: -1}
		if !logAppend {
			if ts := rb.FirstTimestamp + d.rec.TimestampDelta64; ts >= 0 {
				r.Timestamp = ts
			}
		}
		if len(d.rec.Headers) > 0 {
			d.hdrs = d.hdrs[:0]
			for _, h := range d.rec.Headers {
				d.hdrs = append(d.hdrs, queen.Header{Key: h.Key, Value: h.Value})
			}
			r.Headers = d.hdrs
		}
		at := len(buf)
		buf = queen.AppendEnvelope(buf, &r)
		ends = append(ends, len(buf))
		c := len(buf) - at + recordOverhead + d.topicLen
		if d.recordCost += c; d.recordCost > maxRecordCost {
			return fail(faultf(kerr.MessageTooLarge.Code, "records cost past the %d byte request ceiling once decoded", maxRecordCost))
		}
		if cost += c; cost-paid >= minClaimStep {
			if f := payRecords(cost); f != nil {
				return fail(f)
			}
		}
	}
	if len(body) != 0 {
		return fail(faultf(kerr.CorruptMessage.Code, "record batch has %d bytes past its %d records", len(body), rb.NumRecords))
	}
	if f := payRecords(cost); f != nil {
		return fail(f)
	}
	if d.claim != nil && paid > cost {
		// The estimate's unused part is left in buf for the next batch,
		// which pays for it again: only what was used stays paid.
		d.claim.records -= int64(paid - cost)
	}
	return buf, ends, spent, nil
}

// fetchedRecord is one record on its way out: its absolute offset and its
// Kafka content.
type fetchedRecord struct {
	offset int64
	rec    queen.Record
}

// appendFetchBatch appends recs (ascending offsets, gaps allowed) as ONE
// uncompressed RecordBatch v2: base offset the first record's, offset deltas
// from the offsets, first and max timestamps, no producer (-1) and leader
// epoch -1, as every consumer reads an idempotent-free log.
func appendFetchBatch(dst []byte, recs []fetchedRecord) []byte {
	if len(recs) == 0 {
		return dst
	}
	base, first := recs[0].offset, recs[0].rec.Timestamp
	maxTS := first
	for i := range recs {
		maxTS = max(maxTS, recs[i].rec.Timestamp)
	}
	rb := kmsg.RecordBatch{
		FirstOffset:          base,
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      int32(recs[len(recs)-1].offset - base),
		FirstTimestamp:       first,
		MaxTimestamp:         maxTS,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(len(recs)),
	}
	at := len(dst)
	dst = rb.AppendTo(dst)
	var hdrs []kmsg.Header
	for i := range recs {
		r := &recs[i].rec
		hdrs = hdrs[:0]
		for _, h := range r.Headers {
			hdrs = append(hdrs, kmsg.Header{Key: h.Key, Value: h.Value})
		}
		kr := kmsg.Record{
			TimestampDelta64: r.Timestamp - first,
			OffsetDelta:      int32(recs[i].offset - base),
			Key:              r.Key,
			Value:            r.Value,
			Headers:          hdrs,
		}
		dst = appendRecord(dst, &kr)
	}
	binary.BigEndian.PutUint32(dst[at+batchLengthOffset:], uint32(len(dst)-at-batchLengthBase))
	binary.BigEndian.PutUint32(dst[at+batchCRCOffset:], crc32.Checksum(dst[at+batchCRCFrom:], crc32c))
	return dst
}

// appendRecord appends r with its varint Length prefix. The body is encoded
// once, behind a one-byte placeholder, and moved only when its length needs
// a longer varint.
func appendRecord(dst []byte, r *kmsg.Record) []byte {
	r.Length = 0
	at := len(dst)
	dst = r.AppendTo(dst) // Length 0 encodes as one byte
	bodyLen := len(dst) - at - 1
	var lb [binary.MaxVarintLen32]byte
	n := binary.PutVarint(lb[:], int64(bodyLen))
	if n > 1 {
		dst = append(dst, lb[:n-1]...)
		copy(dst[at+n:], dst[at+1:at+1+bodyLen])
	}
	copy(dst[at:], lb[:n])
	return dst
}
