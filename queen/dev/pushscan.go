package dev

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/queen-mq/queen-kafka/internal/jsontext"
)

// scanPushBody is the push route's fast decoder: one validating pass over
// {"items":[{…},…]} that slices every payload out of body instead of
// copying it (encoding/json validates the whole body, then skips each
// RawMessage again and copies it; on 500 × 1 KiB pushes that was most of the
// broker's CPU). ok false means "not the plain shape": the caller then uses
// encoding/json, which stays the authority for every error message and for
// anything unusual (escaped or case-folded keys, null items, odd types).
// The returned items alias body, which the caller must own; they are
// appended to dst (a caller's reused slice, or nil).
func scanPushBody(dst []rawItem, body []byte) (items []rawItem, ok bool) {
	s := &scanner{b: body, dst: dst}
	s.ws()
	if !s.eat('{') {
		return nil, false
	}
	found := false
	fields := s.list('}', func() bool {
		key, ok := s.key()
		switch {
		case !ok || foldsTo(key, "items"):
			return false
		case string(key) == "items":
			items, found = s.items()
			return found
		}
		return s.skip(0)
	})
	if !fields {
		return nil, false
	}
	s.ws()
	if s.i != len(s.b) || !found {
		return nil, false
	}
	return items, true
}

type scanner struct {
	b      []byte
	i      int
	queues tokenCache
	dst    []rawItem // where items appends
}

func (s *scanner) ws() { s.i = jsontext.SkipSpace(s.b, s.i) }

func (s *scanner) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// key reads an object key and the colon after it. Keys with escapes are
// left to encoding/json. The key aliases the body: it is only compared, so
// no string is made of it.
func (s *scanner) key() ([]byte, bool) {
	start := s.i
	if !s.str() {
		return nil, false
	}
	raw := s.b[start+1 : s.i-1]
	if bytes.IndexByte(raw, '\\') >= 0 {
		return nil, false
	}
	s.ws()
	if !s.eat(':') {
		return nil, false
	}
	s.ws()
	return raw, true
}

// list passes the rest of an object or array whose opening byte has been
// eaten: elements separated by commas, each passed by elem, then closing.
func (s *scanner) list(closing byte, elem func() bool) bool {
	for first := true; ; first = false {
		s.ws()
		if s.eat(closing) {
			return true
		}
		if !first {
			if !s.eat(',') {
				return false
			}
			s.ws()
		}
		if !elem() {
			return false
		}
	}
}

func (s *scanner) items() ([]rawItem, bool) {
	if !s.eat('[') {
		return nil, false
	}
	items := s.dst[:0]
	if items == nil {
		items = make([]rawItem, 0, 16)
	}
	ok := s.list(']', func() bool {
		var it rawItem
		if !s.eat('{') || !s.list('}', func() bool { return s.field(&it) }) {
			return false
		}
		items = append(items, it)
		return true
	})
	if !ok {
		return nil, false
	}
	return items, true
}

// field reads one key and value of an item into it.
func (s *scanner) field(it *rawItem) bool {
	key, ok := s.key()
	return ok && s.value(key, it)
}

// value reads the value of an item's field key into it.
func (s *scanner) value(key []byte, it *rawItem) (ok bool) {
	start := s.i
	if !s.skip(0) {
		return false
	}
	val := s.b[start:s.i]
	switch string(key) {
	case "queue":
		it.Queue, ok = s.queues.decode(val)
		return ok
	case "transactionId":
		it.TransactionID, ok = stringOrNull(val)
		return ok
	case "partition":
		it.Partition = val[:len(val):len(val)]
	case "payload":
		it.Payload = val[:len(val):len(val)]
	case "data":
		it.Data = val[:len(val):len(val)]
	default:
		return !foldsToAny(key, "queue", "transactionId", "partition", "payload", "data")
	}
	return true
}

// stringOrNull decodes a JSON string token (nil for null); other types are
// left to encoding/json.
func stringOrNull(tok []byte) (*string, bool) {
	if tok[0] == 'n' {
		return nil, true
	}
	if tok[0] != '"' {
		return nil, false
	}
	inner := tok[1 : len(tok)-1]
	// encoding/json turns invalid UTF-8 into U+FFFD; only plain valid
	// strings take the shortcut, so both paths decode alike.
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		v := string(inner)
		return &v, true
	}
	var v string
	if json.Unmarshal(tok, &v) != nil {
		return nil, false
	}
	return &v, true
}

// tokenCache decodes a run of string-or-null tokens, handing back the last
// value when a token repeats byte for byte: the items of one push nearly
// always name the same queue and partition, and an equal token decodes to
// an equal string, so they share one instead of allocating their own.
type tokenCache struct {
	tok []byte
	val *string
}

func (c *tokenCache) decode(tok []byte) (*string, bool) {
	if c.tok != nil && bytes.Equal(tok, c.tok) {
		return c.val, true
	}
	v, ok := stringOrNull(tok)
	if ok {
		c.tok, c.val = tok, v
	}
	return v, ok
}

// foldsTo reports whether key matches name the way encoding/json matches
// field names (case-insensitively) without being equal to it.
func foldsTo(key []byte, name string) bool {
	return string(key) != name && bytes.EqualFold(key, []byte(name))
}

// foldsToAny reports whether key folds to one of names (foldsTo): a key
// encoding/json would take for a field the fast decoders read by its exact
// name, which they leave to it.
func foldsToAny(key []byte, names ...string) bool {
	for _, name := range names {
		if foldsTo(key, name) {
			return true
		}
	}
	return false
}

// maxScanDepth bounds nesting; deeper documents go to encoding/json.
const maxScanDepth = 1000

// skip validates and passes one JSON value.
func (s *scanner) skip(depth int) bool {
	end, ok := jsontext.SkipValue(s.b, s.i, maxScanDepth-depth)
	if ok {
		s.i = end
	}
	return ok
}

func (s *scanner) lit(w string) bool {
	if len(s.b)-s.i >= len(w) && string(s.b[s.i:s.i+len(w)]) == w {
		s.i += len(w)
		return true
	}
	return false
}

// str passes a string token (see jsontext.ScanString: even invalid UTF-8
// passes, as in encoding/json).
func (s *scanner) str() bool {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return false
	}
	end, _, bad := jsontext.ScanString(s.b, s.i)
	if bad != "" {
		return false
	}
	s.i = end
	return true
}

func (s *scanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}
