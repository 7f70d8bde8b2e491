package dev

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/queen-mq/queen-kafka/internal/jsontext"
	"github.com/queen-mq/queen-kafka/queen"
)

// KV limits of §7.3 (the transaction rider has its own, §8).
const (
	kvMaxOps       = 256
	kvMaxKeys      = 1024
	kvMaxValue     = 65536
	kvReadBudget   = 4 << 20
	kvDefaultLimit = 100
	kvMaxLimit     = 1000
	txnMaxKVOps    = 64
	txnMaxKVKeys   = 256
)

var nsPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

type kvKind uint8

const (
	kvPut kvKind = iota
	kvDelete
	kvGetMany
	kvGetPrefix
	kvGet
	kvPutIfAbsent
	kvIncr
	kvCheck
)

var kvKinds = map[string]kvKind{
	queen.OpPut: kvPut, queen.OpDelete: kvDelete, queen.OpGetMany: kvGetMany, queen.OpGetPrefix: kvGetPrefix,
	queen.OpGet: kvGet, queen.OpPutIfAbsent: kvPutIfAbsent, queen.OpIncr: kvIncr, queen.OpCheck: kvCheck,
}

func (k kvKind) writes() bool {
	return k == kvPut || k == kvDelete || k == kvPutIfAbsent || k == kvIncr
}

func (k kvKind) singleKey() bool { return k != kvGetMany && k != kvGetPrefix }

// kvOp is one validated operation.
type kvOp struct {
	index     int
	name      string // echoed as sent (putIfAbsent stays putIfAbsent)
	kind      kvKind
	ns, key   string
	value     []byte // compacted JSON
	ttl       int64  // seconds; 0 with forever
	hasExpect bool
	expect    int64
	required  bool
	keys      []string
	prefix    string
	after     string
	limit     int
	keysOnly  bool
	delta     number
	min, max  *number
}

// kvError is a refused call: status, error code, stable reason, detail.
type kvError struct {
	status               int
	code, reason, detail string
}

func (e *kvError) Error() string { return e.reason + ": " + e.detail }

func badKV(reason, format string, args ...any) *kvError {
	return &kvError{status: http.StatusBadRequest, code: "kv_bad_request", reason: reason, detail: fmt.Sprintf(format, args...)}
}

func tooLargeKV(reason, format string, args ...any) *kvError {
	return &kvError{status: http.StatusRequestEntityTooLarge, code: "payload_too_large", reason: reason, detail: fmt.Sprintf(format, args...)}
}

func writeKVError(w http.ResponseWriter, e *kvError) {
	writeJSON(w, e.status, map[string]string{"error": e.code, "reason": e.reason, "detail": e.detail})
}

// kvLimits are the caps of the route validating the ops.
type kvLimits struct {
	maxOps, maxKeys int
	inTxn           bool // getPrefix refused; caps reported as the rider's
}

// decodeKVBody accepts {"operations":[…]} or a bare array.
func decodeKVBody(body []byte) ([]json.RawMessage, *kvError) {
	if ops, ok := splitKVBody(body); ok {
		return ops, nil
	}
	return decodeKVBodyStd(body)
}

// splitKVBody is decodeKVBody in one pass over the facade's own form,
// {"operations":[op,…]} and nothing else: each op is validated by
// jsontext.SkipValue (json.Valid's rules) and aliases body. A cluster-mode
// staging write carries up to 4 MiB of values, which the two
// encoding/json passes below each validated and copied. Any other shape
// is not taken (ok false) and goes to them, refusals included.
func splitKVBody(body []byte) (ops []json.RawMessage, ok bool) {
	const head = `{"operations":`
	i := jsontext.SkipSpace(body, 0)
	if !bytes.HasPrefix(body[i:], []byte(head)) {
		return nil, false
	}
	i = jsontext.SkipSpace(body, i+len(head))
	if i >= len(body) || body[i] != '[' {
		return nil, false
	}
	ops = []json.RawMessage{}
	if i = jsontext.SkipSpace(body, i+1); i < len(body) && body[i] == ']' {
		i++
	} else {
		for {
			end, ok := jsontext.SkipValue(body, i, maxOpDepth)
			if !ok {
				return nil, false
			}
			ops = append(ops, body[i:end:end])
			if i = jsontext.SkipSpace(body, end); i >= len(body) {
				return nil, false
			}
			if body[i] == ']' {
				i++
				break
			}
			if body[i] != ',' {
				return nil, false
			}
			i = jsontext.SkipSpace(body, i+1)
		}
	}
	if i = jsontext.SkipSpace(body, i); i >= len(body) || body[i] != '}' {
		return nil, false
	}
	return ops, jsontext.SkipSpace(body, i+1) == len(body)
}

// maxOpDepth is how deep an op the one-pass split follows; a deeper one
// (encoding/json allows 10,000) is left to encoding/json.
const maxOpDepth = 64

// opMembers is an op's members as json.Unmarshal into a map gives them
// (ok false for anything but an object): in one pass, each value aliasing
// raw, when no key holds an escape or invalid UTF-8; else through
// encoding/json. raw is valid JSON (decodeKVBody checked it).
func opMembers(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	if m, ok := splitMembers(raw); ok {
		return m, true
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, false
	}
	return m, true
}

// splitMembers is opMembers' one pass; ok false hands raw to encoding/json.
func splitMembers(raw []byte) (map[string]json.RawMessage, bool) {
	i := jsontext.SkipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, false
	}
	m := make(map[string]json.RawMessage, 8)
	if i = jsontext.SkipSpace(raw, i+1); i < len(raw) && raw[i] == '}' {
		return m, jsontext.SkipSpace(raw, i+1) == len(raw)
	}
	for {
		if i >= len(raw) || raw[i] != '"' {
			return nil, false
		}
		end, escaped, bad := jsontext.ScanString(raw, i)
		if escaped || bad != "" || !utf8.Valid(raw[i+1:end-1]) {
			return nil, false
		}
		key := string(raw[i+1 : end-1])
		if i = jsontext.SkipSpace(raw, end); i >= len(raw) || raw[i] != ':' {
			return nil, false
		}
		i = jsontext.SkipSpace(raw, i+1)
		vend, ok := jsontext.SkipValue(raw, i, maxOpDepth)
		if !ok {
			return nil, false
		}
		m[key] = raw[i:vend:vend] // a repeated key: the last, as encoding/json's map
		if i = jsontext.SkipSpace(raw, vend); i >= len(raw) {
			return nil, false
		}
		switch raw[i] {
		case '}':
			return m, jsontext.SkipSpace(raw, i+1) == len(raw)
		case ',':
			i = jsontext.SkipSpace(raw, i+1)
		default:
			return nil, false
		}
	}
}

// compactValue is json.Compact of v, a valid value: v itself (copied,
// since it aliases the request body) when there is nothing to drop.
func compactValue(v json.RawMessage) ([]byte, error) {
	if jsontext.Compacted(v) {
		return bytes.Clone(v), nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// decodeKVBodyStd is decodeKVBody through encoding/json: every shape the
// one-pass split does not take.
func decodeKVBodyStd(body []byte) ([]json.RawMessage, *kvError) {
	trimmed := bytes.TrimSpace(body)
	var ops []json.RawMessage
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if err := json.Unmarshal(trimmed, &ops); err != nil {
			return nil, badKV("kv_bad_body", "%v", err)
		}
		return ops, nil
	}
	var obj struct {
		Operations json.RawMessage `json:"operations"`
	}
	if err := json.Unmarshal(trimmed, &obj); err != nil {
		return nil, badKV("kv_bad_body", "want {\"operations\":[...]} or an array: %v", err)
	}
	if len(obj.Operations) == 0 || isNull(obj.Operations) {
		return nil, badKV("kv_bad_body", "operations is required")
	}
	if err := json.Unmarshal(obj.Operations, &ops); err != nil {
		return nil, badKV("kv_bad_body", "operations must be an array: %v", err)
	}
	return ops, nil
}

// checkKVOps validates every op before anything is applied.
func checkKVOps(raws []json.RawMessage, lim kvLimits) ([]*kvOp, *kvError) {
	if len(raws) > lim.maxOps {
		return nil, badKV("kv_too_many_ops", "%d ops, at most %d per call", len(raws), lim.maxOps)
	}
	ops := make([]*kvOp, len(raws))
	keys := 0
	for i, raw := range raws {
		o, err := checkKVOp(i, raw, lim)
		if err != nil {
			return nil, err
		}
		ops[i] = o
		switch o.kind {
		case kvGetMany:
			keys += len(o.keys)
		case kvGetPrefix:
			keys += o.limit
		default:
			keys++
		}
	}
	if keys > lim.maxKeys {
		return nil, badKV("kv_too_many_keys", "%d keys, at most %d per call", keys, lim.maxKeys)
	}
	type nsKey struct{ ns, key string }
	written := map[nsKey]int{}
	for _, o := range ops {
		if !o.kind.writes() {
			continue
		}
		k := nsKey{o.ns, o.key}
		if j, dup := written[k]; dup {
			return nil, badKV("kv_duplicate_key_in_call", "ops %d and %d both write %s/%s", j, o.index, o.ns, o.key)
		}
		written[k] = o.index
	}
	return ops, nil
}

func checkKVOp(i int, raw json.RawMessage, lim kvLimits) (*kvOp, *kvError) {
	m, ok := opMembers(raw)
	if !ok {
		return nil, badKV("kv_bad_body", "op %d is not an object", i)
	}
	for _, f := range []string{"tenant", "tenantId", "_tenant"} {
		if _, ok := m[f]; ok {
			return nil, badKV("kv_tenant_not_an_input", "op %d: %s is not an input; the tenant comes from the credential", i, f)
		}
	}
	o := &kvOp{index: i}
	var name string
	if json.Unmarshal(m["op"], &name) != nil {
		return nil, badKV("kv_unknown_op", "op %d: op must be a string", i)
	}
	kind, ok := kvKinds[name]
	if !ok {
		return nil, badKV("kv_unknown_op", "op %d: unknown op %q", i, name)
	}
	if lim.inTxn && kind == kvGetPrefix {
		return nil, badKV("kv_bad_request", "op %d: getPrefix is not allowed in a transaction", i)
	}
	o.name, o.kind = name, kind
	if json.Unmarshal(m["ns"], &o.ns) != nil || !nsPattern.MatchString(o.ns) {
		return nil, badKV("kv_bad_namespace", "op %d: ns must match %s", i, nsPattern)
	}
	if kind.singleKey() {
		raw, ok := m["key"]
		if !ok {
			return nil, badKV("kv_bad_key", "op %d: key is required", i)
		}
		var err *kvError
		if o.key, err = checkKey(i, raw); err != nil {
			return nil, err
		}
	}
	if err := o.checkRequired(m); err != nil {
		return nil, err
	}
	switch kind {
	case kvPut, kvPutIfAbsent:
		raw, ok := m["value"]
		if !ok {
			return nil, badKV("kv_bad_body", "op %d: value is required (null is a value)", i)
		}
		v, err := compactValue(raw)
		if err != nil {
			return nil, badKV("kv_bad_body", "op %d: value: %v", i, err)
		}
		if len(v) > kvMaxValue {
			return nil, tooLargeKV("kv_value_too_large", "op %d: value is %d bytes, at most %d", i, len(v), kvMaxValue)
		}
		o.value = v
		if err := o.checkExpiry(m); err != nil {
			return nil, err
		}
		if err := o.checkExpect(m, false); err != nil {
			return nil, err
		}
		if kind == kvPutIfAbsent {
			if o.hasExpect && o.expect != 0 {
				return nil, badKV("kv_bad_expect", "op %d: putIfAbsent only takes expect 0", i)
			}
			o.hasExpect, o.expect = true, 0
		}
	case kvDelete:
		if err := o.checkExpect(m, false); err != nil {
			return nil, err
		}
	case kvCheck:
		if err := o.checkExpect(m, true); err != nil {
			return nil, err
		}
	case kvIncr:
		if _, ok := m["expect"]; ok && !isNull(m["expect"]) {
			return nil, badKV("kv_bad_expect", "op %d: incr takes no expect", i)
		}
		d, ok := parseNumber(m["delta"])
		if !ok {
			return nil, badKV("kv_bad_body", "op %d: delta must be a number", i)
		}
		o.delta = d
		for _, f := range []struct {
			name string
			dst  **number
		}{{"min", &o.min}, {"max", &o.max}} {
			raw, ok := m[f.name]
			if !ok || isNull(raw) {
				continue
			}
			n, ok := parseNumber(raw)
			if !ok {
				return nil, badKV("kv_bad_body", "op %d: %s must be a number", i, f.name)
			}
			*f.dst = &n
		}
		if err := o.checkExpiry(m); err != nil {
			return nil, err
		}
	case kvGetMany:
		var keys []json.RawMessage
		if json.Unmarshal(m["keys"], &keys) != nil || keys == nil {
			return nil, badKV("kv_bad_key", "op %d: keys must be an array of strings", i)
		}
		o.keys = make([]string, len(keys))
		for j, raw := range keys {
			k, err := checkKey(i, raw)
			if err != nil {
				return nil, err
			}
			o.keys[j] = k
		}
	case kvGetPrefix:
		raw, ok := m["prefix"]
		var p string
		if !ok || json.Unmarshal(raw, &p) != nil || p == "" {
			return nil, badKV("kv_prefix_required", "op %d: prefix must be a non-empty string", i)
		}
		var err *kvError
		if o.prefix, err = checkKey(i, raw); err != nil {
			return nil, err
		}
		o.limit = kvDefaultLimit
		if raw, ok := m["limit"]; ok && !isNull(raw) {
			f, err := strconv.ParseFloat(string(bytes.TrimSpace(raw)), 64)
			if err != nil {
				return nil, badKV("kv_bad_body", "op %d: limit must be a number", i)
			}
			o.limit = int(min(max(f, 1), kvMaxLimit))
		}
		if raw, ok := m["after"]; ok && !isNull(raw) {
			if json.Unmarshal(raw, &o.after) != nil {
				return nil, badKV("kv_bad_body", "op %d: after must be a string", i)
			}
		}
		if raw, ok := m["keysOnly"]; ok && !isNull(raw) {
			if json.Unmarshal(raw, &o.keysOnly) != nil {
				return nil, badKV("kv_bad_body", "op %d: keysOnly must be a boolean", i)
			}
		}
	}
	return o, nil
}

// checkKey applies the key rules: a non-empty string of at most 512 bytes
// without NUL.
func checkKey(i int, raw json.RawMessage) (string, *kvError) {
	var k string
	if json.Unmarshal(raw, &k) != nil {
		return "", badKV("kv_bad_key", "op %d: key must be a string", i)
	}
	if k == "" || strings.IndexByte(k, 0) >= 0 {
		return "", badKV("kv_bad_key", "op %d: key must be non-empty and contain no NUL", i)
	}
	if len(k) > queen.MaxKeyBytes {
		return "", tooLargeKV("kv_key_too_large", "op %d: key is %d bytes, at most %d", i, len(k), queen.MaxKeyBytes)
	}
	return k, nil
}

func (o *kvOp) checkRequired(m map[string]json.RawMessage) *kvError {
	raw, ok := m["required"]
	if !ok || isNull(raw) {
		return nil
	}
	if json.Unmarshal(raw, &o.required) != nil {
		return badKV("kv_bad_body", "op %d: required must be a boolean", o.index)
	}
	return nil
}

// checkExpiry: exactly one of ttlSeconds (int > 0) and forever:true.
func (o *kvOp) checkExpiry(m map[string]json.RawMessage) *kvError {
	declared := 0
	if raw, ok := m["ttlSeconds"]; ok && !isNull(raw) {
		n, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
		if err != nil || n <= 0 || n > math.MaxInt64/1_000_000 {
			return badKV("kv_bad_ttl", "op %d: ttlSeconds must be a positive integer", o.index)
		}
		o.ttl = n
		declared++
	}
	if raw, ok := m["forever"]; ok && !isNull(raw) {
		var f bool
		if json.Unmarshal(raw, &f) != nil {
			return badKV("kv_expiry_not_specified", "op %d: forever must be a boolean", o.index)
		}
		if f {
			declared++
		}
	}
	if declared != 1 {
		return badKV("kv_expiry_not_specified", "op %d: a write needs exactly one of ttlSeconds and forever:true", o.index)
	}
	return nil
}

func (o *kvOp) checkExpect(m map[string]json.RawMessage, mandatory bool) *kvError {
	raw, ok := m["expect"]
	if !ok || isNull(raw) {
		if mandatory {
			return badKV("kv_bad_expect", "op %d: expect is required", o.index)
		}
		return nil
	}
	n, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
	if err != nil || n < 0 {
		return badKV("kv_bad_expect", "op %d: expect must be an integer ≥ 0", o.index)
	}
	o.hasExpect, o.expect = true, n
	return nil
}

// number is a JSON number kept exact when it is an integer.
type number struct {
	isInt bool
	i     int64
	f     float64
}

func parseNumber(raw json.RawMessage) (number, bool) {
	s := string(bytes.TrimSpace(raw))
	if s == "" {
		return number{}, false
	}
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return number{isInt: true, i: i, f: float64(i)}, true
	}
	if s[0] != '-' && (s[0] < '0' || s[0] > '9') {
		return number{}, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return number{}, false
	}
	return number{f: f}, true
}

func (n number) less(o number) bool {
	if n.isInt && o.isInt {
		return n.i < o.i
	}
	return n.f < o.f
}

func (n number) add(o number) number {
	if n.isInt && o.isInt {
		s := n.i + o.i
		if (s > n.i) == (o.i > 0) {
			return number{isInt: true, i: s, f: float64(s)}
		}
	}
	return number{f: n.f + o.f}
}

func (n number) json() []byte {
	if n.isInt {
		return strconv.AppendInt(nil, n.i, 10)
	}
	return strconv.AppendFloat(nil, n.f, 'g', -1, 64)
}
