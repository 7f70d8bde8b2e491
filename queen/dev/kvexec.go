package dev

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/queen-mq/queen-kafka/internal/jsontext"
	"github.com/queen-mq/queen-kafka/queen"
)

// kvResult is the outcome of one op, rendered by appendKVResult.
type kvResult struct {
	applied   bool
	key       string
	value     []byte // nil renders null
	version   int64
	reason    string
	rows      []kvRowOut
	missing   []string
	truncated bool
	nextAfter string
	hasNext   bool
	found     bool
	row       *kvRow // get
}

type kvRowOut struct {
	key string
	row *kvRow
}

// kvFailure is a required write that did not apply: the call rolls back.
type kvFailure struct {
	op      *kvOp
	reason  string
	version int64
	value   []byte
}

// kvExec runs one call's ops under b.mu in one indexed batch of the store:
// each op reads through the batch, so it sees the writes of the ops before
// it, and nothing reaches the store unless the batch is applied. A lost
// required precondition (or a transaction that fails after its rider)
// discards the batch and restores the version sequence.
type kvExec struct {
	st        *state
	batch     *pebble.Batch // indexed
	tenant    string
	now       int64 // one clock instant per call, unix microseconds
	writes    int
	seqBefore int64
	readUsed  int64
	err       error // a failed read of the store: the call answers 500
}

func (b *Broker) newKVExec(tenantName string, now time.Time) *kvExec {
	return b.newKVExecSized(tenantName, now, 0)
}

// newKVExecSized is newKVExec with a batch of size bytes allocated up
// front (0: the engine's default, grown as written): a transaction's
// records are written into the same batch, and growing a batch of tens of
// megabytes by doubling copied it several times over, into fresh memory.
func (b *Broker) newKVExecSized(tenantName string, now time.Time, size int) *kvExec {
	var batch *pebble.Batch
	if size > 0 {
		batch = b.db.NewIndexedBatchWithSize(size)
	} else {
		batch = b.db.NewIndexedBatch()
	}
	return &kvExec{
		st: b.st, batch: batch, tenant: tenantName, now: now.UnixMicro(),
		seqBefore: b.st.kvSeq,
	}
}

// row reads the stored row of (ns, key), live or not (nil if none).
func (x *kvExec) row(ns, key string) *kvRow {
	v, closer, err := x.batch.Get(keyKV(x.tenant, ns, key))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil
	}
	if err == nil {
		var row *kvRow
		row, err = decodeKV(v)
		closer.Close()
		if err == nil {
			return row
		}
	}
	if x.err == nil {
		x.err = fmt.Errorf("read %s/%s: %w", ns, key, err)
	}
	return nil
}

func (x *kvExec) live(ns, key string) *kvRow {
	if r := x.row(ns, key); r.live(x.now) {
		return r
	}
	return nil
}

// write stores row under (ns, key); nil deletes the key. A row with an
// expiry is also filed by it (kind x) for the sweep.
func (x *kvExec) write(ns, key string, row *kvRow) {
	k := keyKV(x.tenant, ns, key)
	if row == nil {
		x.batch.Delete(k, nil)
	} else {
		x.batch.Set(k, encodeKV(row), nil)
		if row.expires != 0 {
			x.batch.Set(keyKVExpiry(row.expires, x.tenant, ns, key), nil, nil)
		}
	}
	x.writes++
}

// rollback discards every write of the call.
func (x *kvExec) rollback() {
	x.batch.Close()
	x.batch = nil
	x.writes = 0
	x.st.kvSeq = x.seqBefore
}

// commitTo finishes the call's writes in its batch: the version sequence
// goes with them, so a version is never reissued after a restart. It
// returns the batch to apply (nil when nothing was written) and what to
// count in memory once applied.
func (x *kvExec) commitTo() (*pebble.Batch, func()) {
	if x.writes == 0 && x.batch.Empty() {
		x.batch.Close()
		return nil, nil
	}
	if x.writes > 0 {
		x.batch.Set(keyKVSeq(), binary.BigEndian.AppendUint64(nil, uint64(x.st.kvSeq)), nil)
	}
	n := x.writes
	return x.batch, func() { x.st.mutations += uint64(n) }
}

// run applies ops: single-key ops in ascending (ns, key) byte order (ties
// in input order), then getMany/getPrefix in input order. It stops at the
// first required op that does not apply and returns it (the caller rolls
// back).
func (x *kvExec) run(ops []*kvOp) ([]kvResult, *kvFailure) {
	res := make([]kvResult, len(ops))
	single := make([]*kvOp, 0, len(ops))
	var reads []*kvOp
	for _, o := range ops {
		if o.kind.singleKey() {
			single = append(single, o)
		} else {
			reads = append(reads, o)
		}
	}
	sort.SliceStable(single, func(i, j int) bool {
		if single[i].ns != single[j].ns {
			return single[i].ns < single[j].ns
		}
		return single[i].key < single[j].key
	})
	for _, o := range single {
		r := &res[o.index]
		x.single(o, r)
		if o.required && (o.kind.writes() || o.kind == kvCheck) && !r.applied {
			return nil, &kvFailure{op: o, reason: r.reason, version: r.version, value: r.value}
		}
	}
	for _, o := range reads {
		if o.kind == kvGetMany {
			x.getMany(o, &res[o.index])
		} else {
			x.getPrefix(o, &res[o.index])
		}
	}
	return res, nil
}

// verdict checks an expect precondition against the live row.
func verdict(cur *kvRow, hasExpect bool, expect int64) string {
	if !hasExpect {
		return ""
	}
	switch {
	case expect == 0 && cur != nil:
		return queen.ReasonExists
	case expect > 0 && cur == nil:
		return queen.ReasonAbsent
	case expect > 0 && cur.version != expect:
		return queen.ReasonVersion
	}
	return ""
}

// miss records an op that did not apply, with the live row it found.
func (r *kvResult) miss(o *kvOp, cur *kvRow, reason string) {
	r.applied, r.key, r.reason = false, o.key, reason
	r.saw(cur)
}

// saw reports the live row an op found (none leaves value null).
func (r *kvResult) saw(cur *kvRow) {
	if cur != nil {
		r.value, r.version = cur.value, cur.version
	}
}

func (x *kvExec) newRow(o *kvOp, value []byte) *kvRow {
	x.st.kvSeq++
	row := &kvRow{value: value, version: x.st.kvSeq, updated: x.now}
	if o.ttl > 0 {
		row.expires = math.MaxInt64 // a ttl past the year 294246 is forever in all but name
		if o.ttl < (math.MaxInt64-x.now)/1e6 {
			row.expires = x.now + o.ttl*1e6
		}
	}
	return row
}

func (x *kvExec) single(o *kvOp, r *kvResult) {
	cur := x.live(o.ns, o.key)
	switch o.kind {
	case kvPut, kvPutIfAbsent:
		if why := verdict(cur, o.hasExpect, o.expect); why != "" {
			r.miss(o, cur, why)
			return
		}
		row := x.newRow(o, o.value)
		x.write(o.ns, o.key, row)
		r.applied, r.key, r.value, r.version = true, o.key, row.value, row.version
	case kvDelete:
		why := verdict(cur, o.hasExpect, o.expect)
		if !o.hasExpect && cur == nil {
			why = queen.ReasonAbsent
		}
		if why != "" {
			r.miss(o, cur, why)
			return
		}
		r.applied, r.key = true, o.key
		r.saw(cur)
		if cur != nil {
			x.write(o.ns, o.key, nil)
		}
	case kvIncr:
		base := number{isInt: true}
		if cur != nil {
			n, ok := parseNumber(cur.value)
			if !ok {
				r.miss(o, cur, "type")
				return
			}
			base = n
		}
		next := base.add(o.delta)
		if (o.min != nil && next.less(*o.min)) || (o.max != nil && o.max.less(next)) {
			r.miss(o, cur, "bounds")
			return
		}
		row := x.newRow(o, next.json())
		x.write(o.ns, o.key, row)
		r.applied, r.key, r.value, r.version = true, o.key, row.value, row.version
	case kvCheck:
		if why := verdict(cur, true, o.expect); why != "" {
			r.miss(o, cur, why)
			return
		}
		r.applied, r.key = true, o.key
		r.saw(cur)
	case kvGet:
		if cur != nil {
			r.found, r.row, r.key = true, cur, o.key
			x.readUsed += int64(len(cur.value))
		}
	}
}

func (x *kvExec) budgetLeft() bool { return x.readUsed < kvReadBudget }

func (x *kvExec) getMany(o *kvOp, r *kvResult) {
	seen := make(map[string]bool, len(o.keys))
	distinct := make([]string, 0, len(o.keys))
	for _, k := range o.keys {
		if !seen[k] {
			seen[k] = true
			distinct = append(distinct, k)
		}
	}
	r.rows = []kvRowOut{}
	r.missing = []string{}
	sorted := append([]string(nil), distinct...)
	sort.Strings(sorted)
	found := make(map[string]bool, len(sorted))
	for _, k := range sorted {
		row := x.live(o.ns, k)
		if row == nil {
			continue
		}
		found[k] = true
		if !x.budgetLeft() {
			r.truncated = true
			continue
		}
		x.readUsed += int64(len(row.value))
		r.rows = append(r.rows, kvRowOut{key: k, row: row})
	}
	for _, k := range distinct {
		if !found[k] {
			r.missing = append(r.missing, k)
		}
	}
}

func (x *kvExec) getPrefix(o *kvOp, r *kvResult) {
	r.rows = []kvRowOut{}
	ns := kvPrefix(x.tenant, o.ns)
	start := o.prefix
	if o.after > start {
		start = o.after
	}
	upper := prefixEnd(append(append([]byte(nil), ns...), o.prefix...))
	it, err := x.batch.NewIter(&pebble.IterOptions{LowerBound: append(append([]byte(nil), ns...), start...), UpperBound: upper})
	if err != nil {
		x.err = err
		return
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		k := string(it.Key()[len(ns):])
		if o.after != "" && k <= o.after {
			continue
		}
		row, err := decodeKV(it.Value())
		if err != nil {
			x.err = fmt.Errorf("read %s/%s: %w", o.ns, k, err)
			return
		}
		if !row.live(x.now) {
			continue
		}
		if len(r.rows) == o.limit || (!o.keysOnly && !x.budgetLeft()) {
			r.truncated = true
			break
		}
		if !o.keysOnly {
			x.readUsed += int64(len(row.value))
		}
		r.rows = append(r.rows, kvRowOut{key: k, row: row})
	}
	if err := it.Error(); err != nil && x.err == nil {
		x.err = err
	}
	if r.truncated {
		switch {
		case len(r.rows) > 0:
			r.nextAfter, r.hasNext = r.rows[len(r.rows)-1].key, true
		case o.after != "":
			r.nextAfter, r.hasNext = o.after, true
		}
	}
}

// appendKVResult renders one result. flat/opIndex are the transaction's
// flat index and rider position (opIndex < 0 on the KV route).
func appendKVResult(dst []byte, o *kvOp, r *kvResult, flat, opIndex int) []byte {
	dst = append(dst, `{"index":`...)
	dst = strconv.AppendInt(dst, int64(flat), 10)
	if opIndex >= 0 {
		dst = append(dst, `,"opIndex":`...)
		dst = strconv.AppendInt(dst, int64(opIndex), 10)
		dst = append(dst, `,"type":"kv"`...)
	}
	dst = append(dst, `,"op":`...)
	dst = jsontext.AppendString(dst, o.name)
	switch o.kind {
	case kvPut, kvPutIfAbsent, kvDelete, kvIncr, kvCheck:
		dst = append(dst, `,"applied":`...)
		dst = strconv.AppendBool(dst, r.applied)
		dst = append(dst, `,"key":`...)
		dst = jsontext.AppendString(dst, o.key)
		dst = append(dst, `,"value":`...)
		dst = appendRaw(dst, r.value)
		dst = append(dst, `,"version":`...)
		dst = strconv.AppendInt(dst, r.version, 10)
		if !r.applied {
			dst = append(dst, `,"reason":`...)
			dst = jsontext.AppendString(dst, r.reason)
		}
	case kvGet:
		dst = append(dst, `,"found":`...)
		dst = strconv.AppendBool(dst, r.found)
		if r.found {
			dst = append(dst, `,"key":`...)
			dst = jsontext.AppendString(dst, o.key)
			dst = append(dst, `,"value":`...)
			dst = appendRaw(dst, r.row.value)
			dst = append(dst, `,"version":`...)
			dst = strconv.AppendInt(dst, r.row.version, 10)
			dst = appendRowTimes(dst, r.row)
		}
	case kvGetMany, kvGetPrefix:
		dst = append(dst, `,"rows":[`...)
		for i, row := range r.rows {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"key":`...)
			dst = jsontext.AppendString(dst, row.key)
			if !o.keysOnly {
				dst = append(dst, `,"value":`...)
				dst = appendRaw(dst, row.row.value)
			}
			dst = append(dst, `,"version":`...)
			dst = strconv.AppendInt(dst, row.row.version, 10)
			dst = appendRowTimes(dst, row.row)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
		if o.kind == kvGetMany {
			dst = append(dst, `,"missing":[`...)
			for i, k := range r.missing {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = jsontext.AppendString(dst, k)
			}
			dst = append(dst, ']')
		}
		dst = append(dst, `,"truncated":`...)
		dst = strconv.AppendBool(dst, r.truncated)
		if o.kind == kvGetPrefix {
			dst = append(dst, `,"nextAfter":`...)
			if r.hasNext {
				dst = jsontext.AppendString(dst, r.nextAfter)
			} else {
				dst = append(dst, "null"...)
			}
		}
	}
	return append(dst, '}')
}

// kvResultSize is about what appendKVResult renders of r, rounded up, so
// that an answer of a stage page (4 MiB of values) is rendered into one
// buffer rather than grown and copied a dozen times.
func kvResultSize(r *kvResult) int {
	n := 256 + len(r.key) + len(r.value) + len(r.nextAfter)
	if r.row != nil {
		n += len(r.row.value) + 128
	}
	for _, row := range r.rows {
		n += len(row.key) + len(row.row.value) + 128
	}
	for _, k := range r.missing {
		n += len(k) + 8
	}
	return n
}

func appendRowTimes(dst []byte, row *kvRow) []byte {
	dst = append(dst, `,"expiresAt":`...)
	if row.expires == 0 {
		dst = append(dst, "null"...)
	} else {
		dst = jsontext.AppendString(dst, queen.FormatTS(time.UnixMicro(row.expires)))
	}
	dst = append(dst, `,"updatedAt":`...)
	return jsontext.AppendString(dst, queen.FormatTS(time.UnixMicro(row.updated)))
}

func appendRaw(dst, raw []byte) []byte {
	if raw == nil {
		return append(dst, "null"...)
	}
	return append(dst, raw...)
}

// appendPrecondition renders the fields of a lost required precondition
// shared by the KV body and the transaction rollback body.
func appendPrecondition(dst []byte, f *kvFailure, failedIndex int) []byte {
	dst = append(dst, `"ok":false,"failedIndex":`...)
	dst = strconv.AppendInt(dst, int64(failedIndex), 10)
	dst = append(dst, `,"kvReason":`...)
	dst = jsontext.AppendString(dst, f.reason)
	dst = append(dst, `,"version":`...)
	dst = strconv.AppendInt(dst, f.version, 10)
	dst = append(dst, `,"value":`...)
	return appendRaw(dst, f.value)
}

// handleKV answers §7.
func (b *Broker) handleKV(w http.ResponseWriter, r *http.Request, c *call) {
	raws, kerr := decodeKVBody(c.body)
	if kerr != nil {
		writeKVError(w, kerr)
		return
	}
	ops, kerr := checkKVOps(raws, kvLimits{maxOps: kvMaxOps, maxKeys: kvMaxKeys})
	if kerr != nil {
		writeKVError(w, kerr)
		return
	}
	if len(ops) == 0 {
		writeBody(w, http.StatusOK, []byte(`{"results":[]}`))
		return
	}
	if !b.enter() {
		writeKVError(w, &kvError{status: http.StatusInternalServerError, code: "kv_error", reason: "kv_error", detail: errClosed.Error()})
		return
	}
	defer b.leave()
	b.mu.Lock()
	x := b.newKVExec(c.tenant, b.now())
	res, fail := x.run(ops)
	var pd *pending
	switch {
	case x.err != nil:
		x.rollback()
		pd = &pending{err: x.err}
	case fail != nil:
		x.rollback()
		pd = b.observed()
	default:
		pd = b.apply(x.commitTo())
	}
	b.mu.Unlock()
	if err := pd.wait(); err != nil {
		writeKVError(w, &kvError{status: http.StatusInternalServerError, code: "kv_error", reason: "kv_error", detail: err.Error()})
		return
	}
	if fail != nil {
		out := append([]byte(nil), `{"reason":"kv_precondition",`...)
		out = appendPrecondition(out, fail, fail.op.index)
		writeBody(w, http.StatusOK, append(out, '}'))
		return
	}
	size := 16
	for i := range res {
		size += kvResultSize(&res[i])
	}
	out := make([]byte, 0, size)
	out = append(out, `{"results":[`...)
	for i, o := range ops {
		if i > 0 {
			out = append(out, ',')
		}
		out = appendKVResult(out, o, &res[i], i, -1)
	}
	writeBody(w, http.StatusOK, append(out, "]}"...))
}
