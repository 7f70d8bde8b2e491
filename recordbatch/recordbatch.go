package recordbatch

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/envelope"
	"github.com/queen-mq/queen-kafka/internal/bufpool"
)

// RecordBatch v2 layout: the fixed header before the records, where the
// Length field and the CRC sit, and the bytes the CRC covers (attributes
// onward) — the layout kmsg.RecordBatch reads and writes.
const (
	HeaderLen         = 61
	batchLengthOffset = 8
	batchMagicOffset  = 16
	batchCRCOffset    = 17
	batchCRCFrom      = 21
	LengthBase        = 12 // FirstOffset and Length precede what Length counts
)

// RecordBatch attribute bits.
const (
	AttrCodecMask     = 0x07
	AttrLogAppendTime = 0x08
	AttrTransactional = 0x10
	AttrControl       = 0x20
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// Fault is a produce batch refused with a Kafka error code; Msg is the
// reason, for the log and the v8+ error_message.
type Fault struct {
	Code int16
	Msg  string
}

func (f *Fault) Error() string { return f.Msg }

// Busy reports whether f is the decode budget refusing to grow without
// waiting, rather than a refusal of the batch: the caller gives back its
// budget (Decoder.Restart) and decodes again.
func (f *Fault) Busy() bool { return f == faultBudgetBusy }

func faultf(code int16, format string, args ...any) *Fault {
	return &Fault{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// ParseProduce reads one produce partition's records into rb. Produce v3
// and up must carry exactly one RecordBatch v2 (Apache Kafka's
// ProduceRequest.validateRecords: INVALID_RECORD otherwise); its CRC-32C must
// match (CORRUPT_MESSAGE, as LogValidator's ensureValid answers). rb.Records
// aliases raw.
func ParseProduce(raw []byte, rb *kmsg.RecordBatch) *Fault {
	if len(raw) == 0 {
		return faultf(kerr.InvalidRecord.Code, "produce requests must have at least one record batch per partition")
	}
	if len(raw) <= batchMagicOffset {
		return faultf(kerr.CorruptMessage.Code, "record batch truncated at %d bytes", len(raw))
	}
	if magic := int8(raw[batchMagicOffset]); magic != 2 {
		return faultf(kerr.InvalidRecord.Code, "produce requests are only allowed to contain record batches with magic version 2, got %d", magic)
	}
	if len(raw) < HeaderLen {
		return faultf(kerr.CorruptMessage.Code, "record batch truncated at %d bytes", len(raw))
	}
	length := int64(int32(binary.BigEndian.Uint32(raw[batchLengthOffset:])))
	end := LengthBase + length
	if end < HeaderLen || end > int64(len(raw)) {
		return faultf(kerr.CorruptMessage.Code, "record batch declares %d bytes, %d present", length, len(raw)-LengthBase)
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
	if rb.Attributes&AttrControl != 0 {
		return faultf(kerr.InvalidRecord.Code, "clients are not allowed to write control records")
	}
	if c := rb.Attributes & AttrCodecMask; c > CodecZstd {
		return faultf(kerr.CorruptMessage.Code, "unknown compression codec %d", c)
	}
	if rb.NumRecords < 0 {
		return faultf(kerr.CorruptMessage.Code, "record batch declares %d records", rb.NumRecords)
	}
	return nil
}

// Decoder turns parsed produce batches into payload envelopes. It owns the
// reusable state of that walk (decompression buffer, record, header
// scratch) and its claim on the pool's decode budget, so a decoder is used
// by one request (or coalesced group of requests) at a time; take one from
// Pool.Get and give it back with Release.
type Decoder struct {
	pool    *Pool
	scratch []byte
	// arrays are the envelope buffers this use took from bufpool, each
	// sized once for a batch's envelopes (and filled further by the
	// batches after it while they fit); Release gives them back once the
	// push that reads them has returned, so that a request's envelopes
	// cost no fresh allocation, zeroing or regrowth.
	arrays [][]byte
	rec    kmsg.Record
	hdrs   []envelope.Header

	// claim pays for the scratch buffer's growth and for the records'
	// cost on the pool's budget; nil pays nothing (only the package's
	// tests decode unpaid). recordCost is what the current request's
	// records have cost so far, against the pool's maxRecordCost, and
	// allowance the decompressed bytes it may still spend.
	claim      *decodeClaim
	own        decodeClaim
	recordCost int
	allowance  int
	// topicLen is the current batch's topic name length, which every one
	// of its items repeats.
	topicLen int
	// recordBytes is what the last batch's records weigh (RecordBytes).
	recordBytes int64
}

// faultBudgetBusy is returned by envelopes when the claim could not grow
// without waiting; the caller gives back its budget and decodes again.
var faultBudgetBusy = &Fault{Code: kerr.MessageTooLarge.Code, Msg: "decode budget busy"}

// scratchKeep is the largest decompression buffer a pooled decoder keeps.
const scratchKeep = 4 << 20

// StartRequest begins the decode of one produce request: its allowance of
// decompressed bytes and its record cost start afresh (a request decoded
// again after Restart starts again too).
func (d *Decoder) StartRequest() {
	d.recordCost, d.allowance = 0, d.pool.maxDecompressed
	if d.claim != nil {
		d.claim.base = d.claim.records
	}
}

// Envelopes appends one payload envelope per record of rb (a batch from
// ParseProduce) to buf and the end of each envelope to ends; each
// record's cost counts topic, which the caller's item for it repeats. A
// refused batch leaves buf and ends as they were and returns its fault,
// which may be a Busy one: the decode budget would not grow without
// waiting, and the request must Restart and be decoded again.
func (d *Decoder) Envelopes(rb *kmsg.RecordBatch, topic string, buf []byte, ends []int) ([]byte, []int, *Fault) {
	d.topicLen = len(topic)
	buf, ends, spent, f := d.envelopes(rb, buf, ends, d.allowance)
	d.allowance -= spent
	return buf, ends, f
}

// RecordBytes is what the records of the batch the last Envelopes call
// decoded weigh as the producer sent them: keys, values, header names and
// values, not their envelopes (0 after a refused batch). The transaction
// caps are counted in it.
func (d *Decoder) RecordBytes() int64 { return d.recordBytes }

// Restart drops the decompression buffer and the envelope buffers and
// gives back everything the claim holds after a Busy fault, then waits, holding nothing, until the
// budget can give the claim what it had reached and as much again. The
// caller drops the envelopes it had appended and decodes the request again.
func (d *Decoder) Restart(ctx context.Context) error {
	d.scratch = nil
	d.putArrays()
	return d.claim.restart(ctx)
}

// putArrays gives back the envelope buffers taken so far.
func (d *Decoder) putArrays() {
	for i, a := range d.arrays {
		bufpool.Put(a)
		d.arrays[i] = nil
	}
	d.arrays = d.arrays[:0]
}

// Release gives back the decoder's claim on the budget, the envelope
// buffers it took (bufpool), and the decoder to its pool. Neither the
// decoder nor any envelope it appended to a buffer of its own may be used
// afterwards.
func (d *Decoder) Release() {
	if d.claim != nil {
		d.claim.release()
	}
	d.putArrays()
	if cap(d.scratch) > scratchKeep {
		d.scratch = nil
	}
	d.claim, d.recordCost, d.allowance, d.topicLen, d.recordBytes = nil, 0, 0, 0, 0
	d.rec = kmsg.Record{Headers: d.rec.Headers[:0]}
	clear(d.hdrs)
	d.hdrs = d.hdrs[:0]
	d.pool.decoders.Put(d)
}

// envelopes appends one payload envelope per record of rb to buf and the end
// of each envelope to ends. allowance is how many decompressed bytes the
// request may still spend; the batch's spend is returned. Every record must
// be present and in offset order; a timestamp is the batch's first timestamp
// plus the record's delta, or none under LogAppendTime (Queen's append time
// then stands in, as it does on the way out).
func (d *Decoder) envelopes(rb *kmsg.RecordBatch, buf []byte, ends []int, allowance int) ([]byte, []int, int, *Fault) {
	body := rb.Records
	spent := 0
	pay, payWindow := freeGrowth, freeGrowth
	if d.claim != nil {
		pay, payWindow = d.claim.payScratch, d.claim.payWindow
	}
	maxDecompressed, maxRecordCost := d.pool.maxDecompressed, d.pool.maxRecordCost
	if c := int(rb.Attributes & AttrCodecMask); c != CodecNone {
		var err error
		if err = pay(cap(d.scratch)); err == nil {
			d.scratch, err = d.pool.codecs.decompress(d.scratch[:0], body, c, allowance, pay, payWindow)
			// The decompressor's history was held for this batch only.
			_ = payWindow(0)
		}
		switch {
		case err == errBudgetBusy:
			return buf, ends, 0, faultBudgetBusy
		case err == errDecompressedTooLarge:
			return buf, ends, 0, faultf(kerr.MessageTooLarge.Code, "record batch decompresses past the %d byte request ceiling", maxDecompressed)
		case err == errDecodedTooLarge:
			return buf, ends, 0, faultf(kerr.MessageTooLarge.Code, "record batch decompresses past the %d byte request ceiling, with the request's records decoded before it", d.pool.budget.Size())
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
	payRecords := func(upTo int) *Fault {
		if d.claim != nil && upTo > paid {
			err := d.claim.payRecords(upTo - paid)
			paid = upTo
			if err == errDecodedTooLarge {
				return faultf(kerr.MessageTooLarge.Code, "records cost past the %d byte request ceiling once decoded, with the batch decompressed", d.pool.budget.Size())
			}
			if err != nil {
				return faultBudgetBusy
			}
		}
		return nil
	}
	start, startEnds, startCost := len(buf), len(ends), d.recordCost
	d.recordBytes = 0
	fail := func(f *Fault) ([]byte, []int, int, *Fault) {
		d.recordCost, d.recordBytes = startCost, 0
		if d.claim != nil {
			d.claim.records -= int64(paid)
		}
		return buf[:start], ends[:startEnds], 0, f
	}
	if f := payRecords(est); f != nil {
		return fail(f)
	}
	if cap(buf)-len(buf) < est {
		// An array of its own, from the pool (given back on Release); the
		// batches after this one continue in it while they fit.
		a := append(bufpool.Get(len(buf)+est), buf...)
		d.arrays = append(d.arrays, a)
		buf = a
	}
	logAppend := rb.Attributes&AttrLogAppendTime != 0
	recordOverhead := d.pool.recordOverhead
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
		r := envelope.Record{Key: d.rec.Key, Value: d.rec.Value, Timestamp: -1}
		d.recordBytes += int64(len(r.Key) + len(r.Value))
		if !logAppend {
			if ts := rb.FirstTimestamp + d.rec.TimestampDelta64; ts >= 0 {
				r.Timestamp = ts
			}
		}
		if len(d.rec.Headers) > 0 {
			d.hdrs = d.hdrs[:0]
			for _, h := range d.rec.Headers {
				d.hdrs = append(d.hdrs, envelope.Header{Key: h.Key, Value: h.Value})
				d.recordBytes += int64(len(h.Key) + len(h.Value))
			}
			r.Headers = d.hdrs
		}
		at := len(buf)
		buf = envelope.Append(buf, &r)
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

// Fetched is one record on its way out: its absolute offset and its Kafka
// content.
type Fetched struct {
	Offset int64
	Record envelope.Record
}

// Seal fills in the Length and the CRC of the one encoded batch b holds.
func Seal(b []byte) []byte {
	binary.BigEndian.PutUint32(b[batchLengthOffset:], uint32(len(b)-LengthBase))
	binary.BigEndian.PutUint32(b[batchCRCOffset:], crc32.Checksum(b[batchCRCFrom:], crc32c))
	return b
}

// AppendRecord appends r with its varint Length prefix. The body is encoded
// once, behind a one-byte placeholder, and moved only when its length needs
// a longer varint.
func AppendRecord(dst []byte, r *kmsg.Record) []byte {
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
