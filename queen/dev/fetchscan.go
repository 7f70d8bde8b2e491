package dev

import "strconv"

// rawFetchBody is the fetch route's body as encoding/json decodes it.
type rawFetchBody struct {
	Entries   *[]rawFetchEntry `json:"entries"`
	MaxWaitMs *int64           `json:"maxWaitMs"`
	MinBytes  *int64           `json:"minBytes"`
}

// scanFetchBody is the fetch route's fast decoder: one validating pass over
// the plain shape {"entries":[{"queue":…,"partition":…,"offset":…,
// "maxBytes":…},…],"maxWaitMs":…,"minBytes":…}, decoding what
// encoding/json would. A wide consumer's parked reads send 1,024 entries per
// call, and encoding/json's reflection was most of the broker's fetch CPU.
// ok false means "not the plain shape" (escaped or case-folded keys, a
// repeated "entries", null where an object or array is expected, numbers
// other than plain integers that fit int64, ...): the caller then uses
// encoding/json, which stays the authority for every error message. The
// partitions returned alias body, which the caller must own.
func scanFetchBody(body []byte) (raw rawFetchBody, ok bool) {
	s := &scanner{b: body}
	s.ws()
	if !s.eat('{') {
		return raw, false
	}
	fields := s.list('}', func() bool {
		key, ok := s.key()
		if !ok {
			return false
		}
		switch string(key) {
		case "entries":
			if raw.Entries != nil {
				return false // encoding/json decodes a repeat into the first's elements
			}
			es, ok := s.fetchEntries()
			raw.Entries = &es
			return ok
		case "maxWaitMs":
			raw.MaxWaitMs, ok = s.int64OrNull()
			return ok
		case "minBytes":
			raw.MinBytes, ok = s.int64OrNull()
			return ok
		}
		return !foldsToAny(key, "entries", "maxWaitMs", "minBytes") && s.skip(0)
	})
	if !fields {
		return raw, false
	}
	s.ws()
	return raw, s.i == len(s.b)
}

// fetchEntries reads the entries array.
func (s *scanner) fetchEntries() ([]rawFetchEntry, bool) {
	if !s.eat('[') {
		return nil, false
	}
	es := make([]rawFetchEntry, 0, 64)
	ok := s.list(']', func() bool {
		var e rawFetchEntry
		if !s.eat('{') || !s.list('}', func() bool { return s.fetchField(&e) }) {
			return false
		}
		es = append(es, e)
		return true
	})
	return es, ok
}

// fetchField reads one key and value of an entry into e.
func (s *scanner) fetchField(e *rawFetchEntry) bool {
	key, ok := s.key()
	if !ok {
		return false
	}
	switch string(key) {
	case "queue":
		start := s.i
		if !s.skip(0) {
			return false
		}
		e.Queue, ok = s.queues.decode(s.b[start:s.i])
		return ok
	case "partition":
		start := s.i
		if !s.skip(0) {
			return false
		}
		val := s.b[start:s.i]
		e.Partition = val[:len(val):len(val)] // a RawMessage takes null as "null" too
		return true
	case "offset":
		e.Offset, ok = s.int64OrNull()
		return ok
	case "maxBytes":
		e.MaxBytes, ok = s.int64OrNull()
		return ok
	}
	return !foldsToAny(key, "queue", "partition", "offset", "maxBytes") && s.skip(0)
}

// int64OrNull reads a plain integer that fits int64 (nil for null); any
// other number is left to encoding/json, which refuses fractions and
// exponents for an int64 (a JSON number other than these is not ok here).
func (s *scanner) int64OrNull() (*int64, bool) {
	if s.lit("null") {
		return nil, true
	}
	start := s.i
	s.eat('-')
	if !s.digits() {
		return nil, false
	}
	tok := s.b[start:s.i]
	if s.i < len(s.b) {
		if c := s.b[s.i]; c == '.' || c == 'e' || c == 'E' {
			return nil, false
		}
	}
	if len(tok) > 1 && tok[0] == '0' || len(tok) > 2 && tok[0] == '-' && tok[1] == '0' {
		return nil, false // a leading zero is no JSON number
	}
	v, err := strconv.ParseInt(string(tok), 10, 64)
	if err != nil {
		return nil, false
	}
	return &v, true
}
