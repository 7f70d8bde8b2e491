package dev

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// encoder appends the binary form of ops; decoder reads it back with bounds
// checks (a CRC-valid frame is trusted to be ours, but never to index out of
// range).
type encoder struct{ b []byte }

func (e *encoder) u8(v byte)        { e.b = append(e.b, v) }
func (e *encoder) uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) varint(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *encoder) bytes(v []byte) {
	e.uvarint(uint64(len(v)))
	e.b = append(e.b, v...)
}
func (e *encoder) str(v string) {
	e.uvarint(uint64(len(v)))
	e.b = append(e.b, v...)
}
func (e *encoder) bool(v bool) {
	if v {
		e.u8(1)
	} else {
		e.u8(0)
	}
}

var errShort = errors.New("truncated op")

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *decoder) u8() byte {
	if d.err != nil || len(d.b) < 1 {
		d.fail(errShort)
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) uvarint() uint64 { return readVarint(d, binary.Uvarint) }
func (d *decoder) varint() int64   { return readVarint(d, binary.Varint) }

// readVarint reads one varint with read (binary.Uvarint or binary.Varint),
// which reports a short or overlong one as n <= 0.
func readVarint[T uint64 | int64](d *decoder, read func([]byte) (T, int)) T {
	if d.err != nil {
		return 0
	}
	v, n := read(d.b)
	if n <= 0 {
		d.fail(errShort)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) raw() []byte {
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.b)) {
		d.fail(errShort)
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

// bytes copies, so that the decoded op does not pin the whole read buffer.
func (d *decoder) bytes() []byte { return append([]byte(nil), d.raw()...) }
func (d *decoder) str() string   { return string(d.raw()) }
func (d *decoder) bool() bool    { return d.u8() != 0 }

func (o *opQueueSet) encode(e *encoder) {
	e.u8(kindQueueSet)
	e.str(o.tenant)
	e.str(o.name)
	e.str(o.id)
	e.varint(o.created)
	o.opts.encode(e)
}

func (o *opQueueDelete) encode(e *encoder) {
	e.u8(kindQueueDelete)
	e.str(o.tenant)
	e.str(o.name)
}

func (o *opRecords) encode(e *encoder) {
	e.u8(kindRecords)
	e.str(o.tenant)
	e.str(o.queue)
	e.str(o.part)
	e.varint(o.base)
	e.varint(o.ts)
	e.uvarint(uint64(len(o.recs)))
	for i := range o.recs {
		r := &o.recs[i]
		e.str(r.msgID)
		e.str(r.txID)
		e.bytes(r.payload)
	}
}

func (o *opKVSet) encode(e *encoder) {
	e.u8(kindKVSet)
	e.str(o.tenant)
	e.str(o.ns)
	e.str(o.key)
	if o.row == nil {
		e.bool(false)
		return
	}
	e.bool(true)
	e.bytes(o.row.value)
	e.varint(o.row.version)
	e.varint(o.row.expires)
	e.varint(o.row.updated)
}

func (o *opKVSeq) encode(e *encoder) {
	e.u8(kindKVSeq)
	e.varint(o.seq)
}

func (o *opLogStart) encode(e *encoder) {
	e.u8(kindLogStart)
	e.str(o.tenant)
	e.str(o.queue)
	e.str(o.part)
	e.varint(o.lso)
}

// encodeFrame is the body of one WAL frame: every op of one request, so a
// request replays entirely or not at all.
func encodeFrame(dst []byte, ops []op) []byte {
	e := encoder{b: dst}
	e.uvarint(uint64(len(ops)))
	for _, o := range ops {
		o.encode(&e)
	}
	return e.b
}

func decodeFrame(b []byte) ([]op, error) {
	d := &decoder{b: b}
	n := d.uvarint()
	if n > uint64(len(b)) {
		return nil, fmt.Errorf("frame claims %d ops in %d bytes", n, len(b))
	}
	ops := make([]op, 0, n)
	for i := uint64(0); i < n && d.err == nil; i++ {
		ops = append(ops, decodeOp(d))
	}
	if d.err != nil {
		return nil, d.err
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%d trailing bytes in frame", len(d.b))
	}
	return ops, nil
}

func decodeOp(d *decoder) op {
	switch k := d.u8(); k {
	case kindQueueSet:
		o := &opQueueSet{tenant: d.str(), name: d.str(), id: d.str(), created: d.varint()}
		o.opts.decode(d)
		return o
	case kindQueueDelete:
		return &opQueueDelete{tenant: d.str(), name: d.str()}
	case kindRecords:
		o := &opRecords{tenant: d.str(), queue: d.str(), part: d.str(), base: d.varint(), ts: d.varint()}
		n := d.uvarint()
		if n > uint64(len(d.b)) {
			d.fail(errShort)
			return o
		}
		o.recs = make([]record, n)
		for i := range o.recs {
			o.recs[i] = record{msgID: d.str(), txID: d.str(), payload: d.bytes(), ts: o.ts}
		}
		return o
	case kindKVSet:
		o := &opKVSet{tenant: d.str(), ns: d.str(), key: d.str()}
		if d.bool() {
			o.row = &kvRow{value: d.bytes(), version: d.varint(), expires: d.varint(), updated: d.varint()}
		}
		return o
	case kindKVSeq:
		return &opKVSeq{seq: d.varint()}
	case kindLogStart:
		return &opLogStart{tenant: d.str(), queue: d.str(), part: d.str(), lso: d.varint()}
	default:
		d.fail(fmt.Errorf("unknown op kind %d", k))
		return nil
	}
}
