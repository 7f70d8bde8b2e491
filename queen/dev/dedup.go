package dev

import (
	"bytes"
	"errors"
	"math"

	"github.com/cockroachdb/pebble/v2"
)

// The producer-dedup index. A transactionId that ends in a decimal
// sequence number (a Kafka producer's keys through the facade are
// "kafka:<pid>:<epoch>:<seq>", one per record, consecutive within a batch)
// is filed in a run: the records of one batch whose ids share the stem
// and count up by one are ONE key, (stem, first number) → (first offset,
// time, count, message ids), found by a SeekLT on the number after the
// one looked up. Any other id is a key of its own (kind d). A push of 100
// keyed records writes one dedup key instead of 100, which is what the
// engine's flushes and compactions spend their time on.
//
// Runs of one stem never need merging: a number is stored again only when
// its previous entry has left the window, and every entry of a run shares
// the run's time, so a later run that hides part of an earlier one (the
// SeekLT finds the later) hides entries already out of the window. An
// earlier run that starts inside a later one would hide the later one's
// entries from its start on: it is out of the window too (its first
// number was stored again), and it is deleted in the batch that stores
// the later run (covered).
//
//	n lp(qid) lp(part) lp(stem) be64(first number) → runValue

const kindDedupRun = 'n'

// splitSeq splits a transactionId into its stem and trailing decimal
// number: ok only for a number in canonical form (no leading zero, at
// most 18 digits, so that it and its successors fit an int64).
func splitSeq(txID string) (stem string, num int64, ok bool) {
	i := len(txID)
	for i > 0 && txID[i-1] >= '0' && txID[i-1] <= '9' {
		i--
	}
	digits := txID[i:]
	if len(digits) == 0 || len(digits) > 18 || (digits[0] == '0' && len(digits) > 1) {
		return "", 0, false
	}
	for _, c := range []byte(digits) {
		num = num*10 + int64(c-'0')
	}
	return txID[:i], num, true
}

func appendKeyRun(dst []byte, qid, part, stem string, num int64) []byte {
	dst = appendLP(appendLP(appendLP(append(dst, kindDedupRun), qid), part), stem)
	return appendOffset(dst, num)
}

// dedupRuns calls fn for each dedup entry of recs (stored at offsets
// base, base+1, …): once per run [i, j) of numbered ids, once per other id
// (j = i+1, single).
func dedupRuns(recs []record, fn func(i, j int, stem string, num int64, single bool)) {
	for i := 0; i < len(recs); {
		if recs[i].txID == "" {
			i++
			continue
		}
		stem, num, ok := splitSeq(recs[i].txID)
		if !ok {
			fn(i, i+1, "", 0, true)
			i++
			continue
		}
		j := i + 1
		for ; j < len(recs); j++ {
			s2, n2, ok2 := splitSeq(recs[j].txID)
			if !ok2 || s2 != stem || n2 != num+int64(j-i) {
				break
			}
		}
		fn(i, j, stem, num, false)
		i = j
	}
}

func appendRunValue(dst []byte, off, ts int64, recs []record) []byte {
	e := encoder{b: dst}
	e.varint(off)
	e.varint(ts)
	e.uvarint(uint64(len(recs)))
	for i := range recs {
		e.str(recs[i].msgID)
	}
	return e.b
}

// runEntry decodes run value v and returns the entry of its k-th id, or
// found false when the run is shorter.
func runEntry(v []byte, k int64) (e dedupEntry, found bool, err error) {
	d := &decoder{b: v}
	off, ts, n := d.varint(), d.varint(), d.uvarint()
	if d.err != nil {
		return e, false, d.err
	}
	if k < 0 || uint64(k) >= n {
		return e, false, nil
	}
	for range k {
		d.raw()
	}
	e = dedupEntry{offset: off + k, ts: ts, msgID: d.str()}
	return e, d.err == nil, d.err
}

// runCount is the number of entries of run value v.
func runCount(v []byte) (int64, error) {
	d := &decoder{b: v}
	d.varint()
	d.varint()
	n := d.uvarint()
	if d.err == nil && n > math.MaxInt64/2 {
		return 0, errors.New("damaged dedup run")
	}
	return int64(n), d.err
}

// runTop is a partition's last stored dedup run of one stem (the one with
// the greatest first number): entries first, first+1, …, first+count−1.
// first is math.MinInt64 (count 0) when the stem has no stored run.
type runTop struct{ first, count int64 }

// maxRunTops bounds a partition's runTops (one per producer stem seen
// lately); past it an arbitrary one is forgotten, which costs its stem one
// seek the next time.
const maxRunTops = 256

// setRunTop records top as stem's last run in p.
func (p *partition) setRunTop(stem string, top runTop) {
	if p.runTops == nil {
		p.runTops = map[string]runTop{}
	}
	if _, ok := p.runTops[stem]; !ok && len(p.runTops) >= maxRunTops {
		for k := range p.runTops {
			delete(p.runTops, k)
			break
		}
	}
	p.runTops[stem] = top
}

// storedRuns brings p's runTops in line with the runs of recs just
// written (with the stale runs they cover deleted, see covered). fresh: p
// was created by the same write, so no other run of it is stored.
func (p *partition) storedRuns(recs []record, fresh bool) {
	dedupRuns(recs, func(i, j int, stem string, num int64, single bool) {
		if single {
			return
		}
		n := int64(j - i)
		top, ok := p.runTops[stem]
		switch {
		case ok && num+n > top.first:
			// The run reaches past the last one's first number, so it is
			// the last now: a run that started inside it is deleted with
			// its write (covered).
			p.runTops[stem] = runTop{first: num, count: n}
		case !ok && fresh:
			p.setRunTop(stem, runTop{first: num, count: n})
		}
	})
}

// runFirstOffset is the offset of a run value's first entry.
func runFirstOffset(v []byte) (int64, error) {
	d := &decoder{b: v}
	off := d.varint()
	return off, d.err
}

// dedupReader looks up the dedup entries of one request through one
// iterator per kind: a batch's keys are mostly ascending (a producer's
// sequences), so each seek continues from the last instead of descending
// every level of the store again, as a point read per record would.
type dedupReader struct {
	r    pebble.Reader
	it   *pebble.Iterator // kind d
	runs *pebble.Iterator // kind n
	key  []byte           // the key sought, in one buffer (a seek copies it)
	// spans holds a runSpan per run-key prefix (queue, partition, stem)
	// looked up: a transaction's items alternate between partitions.
	spans map[string]*runSpan
}

// runSpan is what the last seek of a run learned: for the numbers lo ≤ n <
// hi of one stem, the stored run whose first number is lo governs (value),
// or, value nil, no stored run does (lo is then math.MinInt64). A
// producer's records come in ascending numbers, so the next lookup of the
// same stem is mostly in the span and costs no seek: a transaction of
// 20,000 records to 8 partitions seeks 16 times, not 20,000.
type runSpan struct {
	lo, hi int64
	value  []byte
}

func (d *dedupReader) iter(p **pebble.Iterator, kind byte) (*pebble.Iterator, error) {
	if *p == nil {
		it, err := d.r.NewIter(&pebble.IterOptions{LowerBound: []byte{kind}, UpperBound: []byte{kind + 1}})
		if err != nil {
			return nil, err
		}
		*p = it
	}
	return *p, nil
}

// get finds txID's entry in partition p (queue qid, named part). The
// caller holds Broker.mu, as every writer of dedup keys does: p's runTops
// are read and filled here.
func (d *dedupReader) get(p *partition, qid, part, txID string) (dedupEntry, bool, error) {
	if stem, num, ok := splitSeq(txID); ok {
		if top, ok := p.runTops[stem]; ok && num >= top.first+top.count {
			// Past the stem's last run: no stored run holds num.
			return dedupEntry{}, false, nil
		}
		it, err := d.iter(&d.runs, kindDedupRun)
		if err != nil {
			return dedupEntry{}, false, err
		}
		d.key = appendKeyRun(d.key[:0], qid, part, stem, num+1)
		prefix := d.key[:len(d.key)-8]
		sp := d.spans[string(prefix)]
		if sp == nil {
			if d.spans == nil {
				d.spans = map[string]*runSpan{}
			}
			sp = &runSpan{lo: 1, hi: 0} // empty: sought below
			d.spans[string(prefix)] = sp
		}
		if num < sp.lo || num >= sp.hi {
			if err := d.seekRun(it, prefix, sp); err != nil {
				return dedupEntry{}, false, err
			}
			if sp.hi == math.MaxInt64 {
				// No stored run starts above num: the one found (or none)
				// is the stem's last.
				top := runTop{first: math.MinInt64}
				if sp.value != nil {
					n, err := runCount(sp.value)
					if err != nil {
						return dedupEntry{}, false, err
					}
					top = runTop{first: sp.lo, count: n}
				}
				p.setRunTop(stem, top)
			}
		}
		if sp.value == nil {
			return dedupEntry{}, false, nil
		}
		return runEntry(sp.value, num-sp.lo)
	}
	it, err := d.iter(&d.it, kindDedup)
	if err != nil {
		return dedupEntry{}, false, err
	}
	d.key = appendKeyDedup(d.key[:0], qid, part, txID)
	if !it.SeekGE(d.key) || !bytes.Equal(it.Key(), d.key) {
		return dedupEntry{}, false, it.Error()
	}
	e, err := decodeDedup(it.Value())
	return e, err == nil, err
}

// seekRun fills sp for the number d.key names (plus one) under prefix:
// the run the SeekLT before it finds, and the first number of the next
// stored run.
func (d *dedupReader) seekRun(it *pebble.Iterator, prefix []byte, sp *runSpan) error {
	sp.lo, sp.hi, sp.value = 1, 0, sp.value[:0] // empty until filled
	ours := func(k []byte) bool { return len(k) == len(d.key) && bytes.Equal(k[:len(prefix)], prefix) }
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	if it.SeekGE(d.key) && ours(it.Key()) {
		hi = offsetOf(it.Key())
	} else if err := it.Error(); err != nil {
		return err
	}
	if it.SeekLT(d.key) && ours(it.Key()) {
		v, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		lo, sp.value = offsetOf(it.Key()), append(sp.value, v...)
	} else if err := it.Error(); err != nil {
		return err
	} else {
		sp.value = nil
	}
	sp.lo, sp.hi = lo, hi
	return nil
}

// covered lists the keys of stored runs that start inside a run of recs
// (not at its first number: that key is overwritten), for partition p
// (nil: a new one).
func (d *dedupReader) covered(p *partition, qid, part string, recs []record) ([][]byte, error) {
	var out [][]byte
	var err error
	dedupRuns(recs, func(i, j int, stem string, num int64, single bool) {
		if single || j-i < 2 || err != nil {
			return
		}
		if p != nil {
			if top, ok := p.runTops[stem]; ok && top.first <= num {
				return // no stored run of the stem starts above num
			}
		}
		var it *pebble.Iterator
		if it, err = d.iter(&d.runs, kindDedupRun); err != nil {
			return
		}
		end := appendKeyRun(nil, qid, part, stem, num+int64(j-i))
		d.key = appendKeyRun(d.key[:0], qid, part, stem, num+1)
		for ok := it.SeekGE(d.key); ok && bytes.Compare(it.Key(), end) < 0; ok = it.Next() {
			out = append(out, bytes.Clone(it.Key()))
		}
		err = it.Error()
	})
	return out, err
}

func (d *dedupReader) close() {
	for _, it := range []*pebble.Iterator{d.it, d.runs} {
		if it != nil {
			it.Close()
		}
	}
}

// writeDedup adds the dedup entries of a group's records (stored from
// offset base at ts) to batch: a run key per run, a d key per other id.
func writeDedup(batch *pebble.Batch, qid, part string, base, ts int64, recs []record, kbuf, vbuf []byte) ([]byte, []byte) {
	dedupRuns(recs, func(i, j int, stem string, num int64, single bool) {
		if single {
			kbuf = appendKeyDedup(kbuf[:0], qid, part, recs[i].txID)
			vbuf = appendDedup(vbuf[:0], dedupEntry{offset: base + int64(i), ts: ts, msgID: recs[i].msgID})
		} else {
			kbuf = appendKeyRun(kbuf[:0], qid, part, stem, num)
			vbuf = appendRunValue(vbuf[:0], base+int64(i), ts, recs[i:j])
		}
		batch.Set(kbuf, vbuf, nil)
	})
	return kbuf, vbuf
}

// A batch-age value lists the batch's dedup keys, for the dedup sweep:
//
//	varint ts | uvarint n | n × (u8 0, uvarint offset − first, uvarint len, transactionId
//	                            | u8 1, uvarint offset − first, uvarint len, stem, varint number)
func appendBatchAge(dst []byte, ts, first int64, recs []record) []byte {
	e := encoder{b: dst}
	e.varint(ts)
	n := 0
	dedupRuns(recs, func(int, int, string, int64, bool) { n++ })
	e.uvarint(uint64(n))
	dedupRuns(recs, func(i, _ int, stem string, num int64, single bool) {
		if single {
			e.u8(0)
			e.uvarint(uint64(i))
			e.str(recs[i].txID)
			return
		}
		e.u8(1)
		e.uvarint(uint64(i))
		e.str(stem)
		e.varint(num)
	})
	return e.b
}

var errBadAge = errors.New("damaged batch-age value")

// decodeBatchAge appends the dedup keys listed by batch-age value v (filed
// under first) to dst.
func decodeBatchAge(dst []dedupAged, v []byte, first int64) ([]dedupAged, int64, error) {
	d := &decoder{b: v}
	ts := d.varint()
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.b)/3) {
		return dst, 0, errBadAge
	}
	for range n {
		var a dedupAged
		tag := d.u8()
		delta := d.uvarint()
		if d.err != nil || delta > 1<<62 {
			return dst, 0, errBadAge
		}
		a.off = first + int64(delta)
		switch tag {
		case 0:
			a.txID = d.str()
		case 1:
			a.run, a.txID, a.num = true, d.str(), d.varint()
		default:
			return dst, 0, errBadAge
		}
		if d.err != nil {
			return dst, 0, errBadAge
		}
		dst = append(dst, a)
	}
	if len(d.b) != 0 {
		return dst, 0, errBadAge
	}
	return dst, ts, nil
}

// dedupAged is one dedup key a sweep may delete: a d key (txID) or a run
// (stem in txID, its first number), whose first entry is at off.
type dedupAged struct {
	off  int64
	txID string
	run  bool
	num  int64
}

// forget deletes a's key in batch if it is still the one filed at a.off
// (a newer record with the same id replaces it).
func (a *dedupAged) forget(r pebble.Reader, batch *pebble.Batch, qid, part string) {
	var key []byte
	if a.run {
		key = appendKeyRun(nil, qid, part, a.txID, a.num)
	} else {
		key = keyDedup(qid, part, a.txID)
	}
	v, closer, err := r.Get(key)
	if err != nil {
		return
	}
	var off int64
	if a.run {
		off, err = runFirstOffset(v)
	} else {
		var e dedupEntry
		e, err = decodeDedup(v)
		off = e.offset
	}
	closer.Close()
	if err == nil && off == a.off {
		batch.Delete(key, nil)
	}
}
