package queen

import (
	"encoding/json"
	"math"
)

// decodeKVResponse parses the 200 body of POST /api/v1/kv in one pass. A
// cluster-mode commit reads its transaction's stage back (up to 4 MiB of
// values a page), and every staging write's answer echoes the values it
// put (§7.4): encoding/json validated each body, then decoded it,
// re-scanning and copying every value, about a third of the time of
// reading a stage. Here each byte is scanned once and the values alias
// body (which the caller owns and never reuses).
//
// The result is exactly what json.Unmarshal into kvResponseWire gives, and
// an input json.Unmarshal refuses is refused (FuzzKVDecode checks both);
// rare shapes where encoding/json has rules of its own (keys that differ
// from a field name only in case, repeated keys, escaped keys) are handed
// to encoding/json, as decodeFetchResponse does.
func decodeKVResponse(body []byte) (kvResponseWire, error) {
	return decodeWhole(body, (*scanner).kvResponse)
}

// kvDecoder plugs decodeKVResponse into Client.call.
type kvDecoder struct{ wire kvResponseWire }

func (d *kvDecoder) decodeBody(raw []byte) (err error) {
	d.wire, err = decodeKVResponse(raw)
	return err
}

func (s *scanner) kvResponse() (kvResponseWire, error) {
	var out kvResponseWire
	if isNull, err := s.null(); isNull || err != nil {
		return out, err
	}
	var seen fields
	err := s.object(func(key []byte) error {
		name, err := seen.known(key, "results", "ok", "reason", "failedIndex", "kvReason", "version", "value")
		if err != nil {
			return err
		}
		switch name {
		case "results":
			out.Results, err = list(s, out.Results, s.kvResult)
		case "ok":
			out.OK, err = s.boolPtr()
		case "reason":
			out.Reason, err = s.str()
		case "failedIndex":
			out.FailedIndex, err = s.intPtr()
		case "kvReason":
			out.KVReason, err = s.strPtr()
		case "version":
			out.Version, err = s.int64Ptr()
		case "value":
			out.Value, err = s.raw()
		default:
			_, err = s.value()
		}
		return err
	})
	return out, err
}

// kvResultNames are the members of a KV result, "index" first.
var kvResultNames = []string{"index", "opIndex", "type", "op", "applied", "key", "value", "version", "reason", "rows", "missing", "truncated", "nextAfter", "found"}

func (s *scanner) kvResult(r *kvResultWire) error {
	if isNull, err := s.null(); isNull || err != nil {
		return err
	}
	var seen fields
	return s.object(func(key []byte) error {
		name, err := seen.known(key, kvResultNames...)
		if err != nil {
			return err
		}
		return s.kvResultMember(name, &r.KVResult, &r.Index)
	})
}

// kvResultMember decodes member name ("" for one of no field) of a KV
// result into r, its "index" into *index (the wire's own field, which
// shadows r.Index).
func (s *scanner) kvResultMember(name string, r *KVResult, index **int) (err error) {
	switch name {
	case "index":
		*index, err = s.intPtr()
	case "opIndex":
		r.OpIndex, err = s.intPtr()
	case "type":
		r.Type, err = s.strOf("push", "kv")
	case "op":
		r.Op, err = s.strOf(OpPut, OpGet)
	case "applied":
		r.Applied, err = s.bool()
	case "key":
		r.Key, err = s.str()
	case "value":
		r.Value, err = s.raw()
	case "version":
		r.Version, err = s.int64()
	case "reason":
		r.Reason, err = s.str()
	case "rows":
		r.Rows, err = list(s, r.Rows, s.kvRow)
	case "missing":
		r.Missing, err = list(s, r.Missing, func(m *string) (err error) { *m, err = s.str(); return err })
	case "truncated":
		r.Truncated, err = s.bool()
	case "nextAfter":
		r.NextAfter, err = s.strPtr()
	case "found":
		r.Found, err = s.boolPtr()
	default:
		_, err = s.value()
	}
	return err
}

func (s *scanner) kvRow(r *KVRow) error {
	if isNull, err := s.null(); isNull || err != nil {
		return err
	}
	var seen fields
	return s.object(func(key []byte) error {
		name, err := seen.known(key, "key", "value", "version", "expiresAt", "updatedAt")
		if err != nil {
			return err
		}
		switch name {
		case "key":
			r.Key, err = s.str()
		case "value":
			r.Value, err = s.raw()
		case "version":
			r.Version, err = s.int64()
		case "expiresAt":
			r.ExpiresAt, err = s.strPtr()
		case "updatedAt":
			r.UpdatedAt, err = s.str()
		default:
			_, err = s.value()
		}
		return err
	})
}

// raw is a json.RawMessage field: the value's bytes, null included (as
// encoding/json keeps them), aliasing the body with its capacity cut so
// that appending to it cannot touch what follows.
func (s *scanner) raw() (json.RawMessage, error) {
	v, err := s.value()
	if err != nil {
		return nil, err
	}
	return v[:len(v):len(v)], nil
}

// bool decodes a boolean (null leaves false).
func (s *scanner) bool() (bool, error) {
	switch s.peek() {
	case 'n':
		return false, s.literal("null")
	case 't':
		return true, s.literal("true")
	case 'f':
		return false, s.literal("false")
	}
	return false, s.errf("want a boolean")
}

func (s *scanner) boolPtr() (*bool, error) { return nullable(s, s.bool) }

func (s *scanner) strPtr() (*string, error) {
	return nullable(s, func() (string, error) {
		if s.peek() != '"' {
			return "", s.errf("want a string")
		}
		return s.str()
	})
}

func (s *scanner) int64Ptr() (*int64, error) { return nullable(s, s.int64) }

func (s *scanner) intPtr() (*int, error) {
	return nullable(s, func() (int, error) {
		v, err := s.int64()
		if err == nil && (v < math.MinInt || v > math.MaxInt) {
			err = s.errf("want an int, got %d", v)
		}
		return int(v), err
	})
}
