package dev

import (
	"encoding/binary"
	"fmt"
)

// The store's key space. Every key starts with one byte naming its kind;
// names inside a key are length-prefixed (uvarint) except the last one, so a
// name can hold any byte and the last component sorts as itself: queue names
// within a tenant, KV keys within a namespace, offsets (big-endian) within a
// partition. Queue data is filed under the queue's id, never its name, so a
// deleted queue's rows go with one range deletion and a queue created again
// under the same name starts empty. Never renumber a kind: old stores must
// keep opening.
//
//	m kvseq                                   → u64 last KV version issued
//	q lp(tenant) name                         → queueValue
//	p lp(qid) part                            → partValue (log end, log start, bytes, last ts)
//	b lp(qid) lp(part) be64(first offset)     → batchValue (the records one request stored there)
//	d lp(qid) lp(part) transactionId          → dedupValue (offset, ts, message id)
//	n lp(qid) lp(part) lp(stem) be64(number)  → runValue (a run of numbered transactionIds: dedup.go)
//	a lp(qid) lp(part) be64(first offset)     → ts, dedup keys… (a batch's dedup keys, by age)
//	k lp(tenant) lp(ns) key                   → kvValue
//	x be64(expires) lp(tenant) lp(ns) key     → "" (KV rows by expiry)
//
//	c lp(qid) lp(part) group                  → cursorValue (pop/ack: committed, lease, retries)
//	l lp(leaseId) lp(qid) lp(part) group      → "" (cursors by the lease that holds them)
//	z lp(qid) lp(part) lp(group) be64(offset) → dlqValue (dead letters)
//	s lp(qid) group                           → subValue (a group's subscription on a queue: subscription.go)
//
// Records are stored a batch to a key: the records one request stored in
// one partition (one commit time, contiguous offsets) are one value, filed
// under their first offset, so that a push of 100 records writes one
// record key, not 100, and the engine's memtable inserts, flushes and
// compactions (most of queen-dev's CPU under a produce load when each
// record was a key) handle a hundredth of the keys. A read from any offset
// finds its batch with a SeekLT on the offset after it (records.go). The
// dedup entries of a batch are aged by one key per batch (kind a), not one
// per record. Kinds r and e were the layout of one key per record; a store
// holding either is refused (openEngine).
const (
	kindMeta      = 'm'
	kindQueue     = 'q'
	kindPart      = 'p'
	kindBatch     = 'b'
	kindDedup     = 'd'
	kindBatchAge  = 'a'
	kindOldRecord = 'r' // one key per record: no longer read
	kindOldAge    = 'e' // one age key per keyed record: no longer read
	kindKV        = 'k'
	kindKVExpiry  = 'x'
	kindCursor    = 'c'
	kindLease     = 'l'
	kindDLQ       = 'z'
	kindSub       = 's'
	metaKVSeqName = "kvseq"
)

func appendLP(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func keyKVSeq() []byte { return append([]byte{kindMeta}, metaKVSeqName...) }

func keyQueue(tenant, name string) []byte {
	return append(appendLP([]byte{kindQueue}, tenant), name...)
}

func keyPart(qid, part string) []byte {
	return append(appendLP([]byte{kindPart}, qid), part...)
}

// keyPrefix is the prefix of kind's keys for one partition (kinds b, d, a).
func keyPrefix(kind byte, qid, part string) []byte {
	b := make([]byte, 0, 2+len(qid)+len(part)+2+8+16)
	b = append(b, kind)
	b = appendLP(b, qid)
	return appendLP(b, part)
}

// queuePrefix is the prefix of kind's keys of one queue (kinds p, b, d, a).
func queuePrefix(kind byte, qid string) []byte {
	return appendLP([]byte{kind}, qid)
}

func appendOffset(prefix []byte, off int64) []byte {
	return binary.BigEndian.AppendUint64(prefix, uint64(off))
}

func keyBatch(qid, part string, first int64) []byte {
	return appendOffset(keyPrefix(kindBatch, qid, part), first)
}

func keyDedup(qid, part, txID string) []byte {
	return appendKeyDedup(make([]byte, 0, 2+len(qid)+len(part)+2+len(txID)), qid, part, txID)
}

func appendKeyDedup(dst []byte, qid, part, txID string) []byte {
	return append(appendLP(appendLP(append(dst, kindDedup), qid), part), txID...)
}

func keyBatchAge(qid, part string, first int64) []byte {
	return appendOffset(keyPrefix(kindBatchAge, qid, part), first)
}

func kvPrefix(tenant, ns string) []byte {
	return appendLP(appendLP([]byte{kindKV}, tenant), ns)
}

func keyKV(tenant, ns, key string) []byte { return append(kvPrefix(tenant, ns), key...) }

func keyKVExpiry(expires int64, tenant, ns, key string) []byte {
	b := binary.BigEndian.AppendUint64([]byte{kindKVExpiry}, uint64(expires))
	return append(appendLP(appendLP(b, tenant), ns), key...)
}

// prefixEnd is the smallest key greater than every key starting with p.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil // every byte 0xff: no upper bound
}

// readLP reads one length-prefixed name off the front of b.
func readLP(b []byte) (string, []byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return "", nil, fmt.Errorf("bad name in key %q", b)
	}
	return string(b[k : k+int(n)]), b[k+int(n):], nil
}

// offsetOf is the offset at the end of a batch or batch-age key.
func offsetOf(key []byte) int64 {
	return int64(binary.BigEndian.Uint64(key[len(key)-8:]))
}

// offsetBelow is the offset of key when key is prefix followed by an offset
// below hwm; ok is false once a scan from prefix has left the range.
func offsetBelow(key, prefix []byte, hwm int64) (off int64, ok bool) {
	if len(key) != len(prefix)+8 || string(key[:len(prefix)]) != string(prefix) {
		return 0, false
	}
	off = offsetOf(key)
	return off, off < hwm
}

// Values. Each is the existing varint codec of codec.go.

func encodeQueue(id string, created int64, opts *queueOptions) []byte {
	e := encoder{b: make([]byte, 0, 128)}
	e.str(id)
	e.varint(created)
	opts.encode(&e)
	return e.b
}

func decodeQueue(v []byte) (id string, created int64, opts queueOptions, err error) {
	d := &decoder{b: v}
	id, created = d.str(), d.varint()
	opts.decode(d)
	return id, created, opts, d.err
}

func encodePart(p *partition) []byte {
	e := encoder{b: make([]byte, 0, 40)}
	e.varint(p.hwm)
	e.varint(p.lso)
	e.varint(p.bytes)
	e.varint(p.lastTS)
	return e.b
}

func decodePart(v []byte, p *partition) error {
	d := &decoder{b: v}
	p.hwm, p.lso, p.bytes, p.lastTS = d.varint(), d.varint(), d.varint(), d.varint()
	return d.err
}

// appendRecordValue is one record on its own, as a dead letter (kind z)
// embeds it; stored records are in batches (records.go).
func appendRecordValue(dst []byte, r *recordView) []byte {
	e := encoder{b: dst}
	e.varint(r.ts)
	e.raw(r.msgID)
	e.raw(r.txID)
	return append(e.b, r.payload...)
}

// recordView is a stored record decoded without copying: its fields alias
// the value they were read from.
type recordView struct {
	ts          int64
	msgID, txID []byte
	payload     []byte
}

// decodeRecord reads appendRecordValue's form.
func decodeRecord(v []byte) (recordView, error) {
	d := &decoder{b: v}
	var r recordView
	r.ts = d.varint()
	r.msgID = d.raw()
	r.txID = d.raw()
	r.payload = d.b
	return r, d.err
}

func (r *recordView) transactionID() []byte {
	if len(r.txID) > 0 {
		return r.txID
	}
	return r.msgID
}

func appendDedup(dst []byte, e dedupEntry) []byte {
	enc := encoder{b: dst}
	enc.varint(e.offset)
	enc.varint(e.ts)
	enc.str(e.msgID)
	return enc.b
}

func decodeDedup(v []byte) (dedupEntry, error) {
	d := &decoder{b: v}
	e := dedupEntry{offset: d.varint(), ts: d.varint(), msgID: d.str()}
	return e, d.err
}

func encodeKV(r *kvRow) []byte {
	e := encoder{b: make([]byte, 0, 32+len(r.value))}
	e.varint(r.version)
	e.varint(r.expires)
	e.varint(r.updated)
	return append(e.b, r.value...)
}

// decodeKV copies: the row outlives the engine's buffer.
func decodeKV(v []byte) (*kvRow, error) {
	d := &decoder{b: v}
	r := &kvRow{version: d.varint(), expires: d.varint(), updated: d.varint()}
	r.value = append([]byte(nil), d.b...)
	return r, d.err
}
