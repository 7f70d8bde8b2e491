package queen

import (
	"bytes"

	"github.com/queen-mq/queen-kafka/internal/jsontext"
)

// decodePushResponse parses the 201 body of POST /api/v1/push (an array of
// results) in one pass: through encoding/json it was most of the client's
// CPU on the produce path (reflection per field, a validation pass, a
// string allocation per field). The strings of all results are cut from ONE
// copy of the body, and the status of a result is the package's constant
// when it is one.
//
// The result is exactly what json.Unmarshal into []pushResultWire gives,
// and an input json.Unmarshal refuses is refused (FuzzPushDecode checks
// both); the shapes where encoding/json has extra rules (escapes, invalid
// UTF-8, keys differing only in case, repeated keys) take encoding/json.
func decodePushResponse(body []byte) ([]pushResultWire, error) {
	text := string(body)
	if out, ok := decodeCanonicalPush(body, text); ok {
		return out, nil
	}
	return decodeWhole(body, func(s *scanner) ([]pushResultWire, error) { return s.pushResults(text) })
}

// pushDecoder plugs decodePushResponse into Client.call.
type pushDecoder struct{ results []pushResultWire }

// copiesAnswer: every string of the results is cut from a copy of the body
// (decodePushResponse), so its buffer may be reused.
func (*pushDecoder) copiesAnswer() {}

func (d *pushDecoder) decodeBody(raw []byte) (err error) {
	d.results, err = decodePushResponse(raw)
	return err
}

// pushResults decodes the array; text is body as a string, which every
// decoded string is a substring of.
func (s *scanner) pushResults(text string) ([]pushResultWire, error) {
	// One result is at least 150 bytes of a real broker's answer; the
	// estimate only sizes the first allocation.
	var ptrs pushPointers
	return list(s, make([]pushResultWire, 0, len(s.b)/128+1), func(w *pushResultWire) error {
		return s.pushResult(w, text, &ptrs)
	})
}

// pushPointers backs every Index and Offset pointer of one answer, so that
// a result costs no allocation of its own for either.
type pushPointers struct {
	indexes []int
	offsets []int64
}

// slot stores v in *block and returns a pointer to it. A full block is
// replaced, never grown: earlier pointers keep the old one alive.
func slot[T any](block *[]T, v T) *T {
	if cap(*block) == len(*block) {
		*block = make([]T, 0, max(16, 2*cap(*block)))
	}
	*block = append(*block, v)
	return &(*block)[len(*block)-1]
}

func (s *scanner) pushResult(w *pushResultWire, text string, ptrs *pushPointers) error {
	if isNull, err := s.null(); isNull || err != nil {
		return err
	}
	var seen fields
	return s.object(func(key []byte) error {
		name, err := seen.known(key, "index", "message_id", "transaction_id", "queueName", "status", "offset")
		if err != nil {
			return err
		}
		switch name {
		case "index":
			var isNull bool
			if isNull, err = s.null(); isNull || err != nil {
				w.Index = nil
				return err
			}
			var v int64
			if v, err = s.int64(); err == nil {
				w.Index = slot(&ptrs.indexes, int(v))
			}
		case "message_id":
			w.MessageID, err = s.substr(text)
		case "transaction_id":
			w.TransactionID, err = s.substr(text)
		case "queueName":
			w.QueueName, err = s.substr(text)
		case "status":
			if w.Status, err = s.substr(text); err == nil {
				w.Status = internStatus(w.Status)
			}
		case "offset":
			var isNull bool
			if isNull, err = s.null(); isNull || err != nil {
				w.Offset = nil
				return err
			}
			var v int64
			if v, err = s.int64(); err == nil {
				w.Offset = slot(&ptrs.offsets, v)
			}
		default:
			_, err = s.value()
		}
		return err
	})
}

// substr decodes a string value as a substring of text (body as a string);
// null leaves it empty, as encoding/json does for a fresh result. A string
// with escapes or invalid UTF-8 takes the fallback.
func (s *scanner) substr(text string) (string, error) {
	if isNull, err := s.null(); isNull || err != nil {
		return "", err
	}
	if s.peek() != '"' {
		return "", s.errf("want a string")
	}
	start := s.i + 1
	_, odd, err := s.stringSpan()
	if err != nil {
		return "", err
	}
	if odd {
		return "", errFallback
	}
	return text[start : s.i-1], nil
}

// internStatus returns the package's constant for a known status, so that
// a result does not keep the body's copy alive through its status alone.
func internStatus(st string) string {
	for _, c := range [...]string{StatusQueued, StatusDuplicate, StatusBuffered, StatusError, StatusFailed} {
		if st == c {
			return c
		}
	}
	return st
}

// decodeCanonicalPush reads exactly the answer a Queen broker renders, every
// result {"index":N,"message_id":"…","transaction_id":"…","queueName":"…",
// "status":"…","offset":N} in that order, with no whitespace, its strings
// printable ASCII without escapes and its numbers plain non-negative
// integers, in one pass of literal compares: the general scanner's
// per-member dispatch was most of the push answer's cost. Anything else
// answers false and is left to the general path; FuzzPushDecode holds both
// to encoding/json.
func decodeCanonicalPush(p []byte, text string) ([]pushResultWire, bool) {
	i := 0
	lit := func(l string) bool {
		if len(p)-i < len(l) || string(p[i:i+len(l)]) != l {
			return false
		}
		i += len(l)
		return true
	}
	str := func() (string, bool) {
		if i >= len(p) || p[i] != '"' {
			return "", false
		}
		n := bytes.IndexByte(p[i+1:], '"')
		if n < 0 || !jsontext.PlainASCII(p[i+1:i+1+n]) {
			return "", false
		}
		v := text[i+1 : i+1+n]
		i += n + 2
		return v, true
	}
	num := func() (int64, bool) {
		start := i
		for i < len(p) && p[i] >= '0' && p[i] <= '9' && i-start < 18 {
			i++
		}
		switch {
		case i == start, i < len(p) && p[i] >= '0' && p[i] <= '9': // none, or past 18 digits
			return 0, false
		case p[start] == '0' && i-start > 1: // a leading zero
			return 0, false
		}
		v := int64(0)
		for _, c := range p[start:i] {
			v = v*10 + int64(c-'0')
		}
		return v, true
	}
	if !lit("[") {
		return nil, false
	}
	out := make([]pushResultWire, 0, len(p)/128+1)
	if lit("]") {
		return out, i == len(p)
	}
	var ptrs pushPointers
	for {
		var w pushResultWire
		var ok bool
		var v int64
		if !lit(`{"index":`) {
			return nil, false
		}
		if v, ok = num(); !ok {
			return nil, false
		}
		w.Index = slot(&ptrs.indexes, int(v))
		if !lit(`,"message_id":`) {
			return nil, false
		}
		if w.MessageID, ok = str(); !ok || !lit(`,"transaction_id":`) {
			return nil, false
		}
		if w.TransactionID, ok = str(); !ok || !lit(`,"queueName":`) {
			return nil, false
		}
		if w.QueueName, ok = str(); !ok || !lit(`,"status":`) {
			return nil, false
		}
		if w.Status, ok = str(); !ok || !lit(`,"offset":`) {
			return nil, false
		}
		w.Status = internStatus(w.Status)
		if v, ok = num(); !ok || !lit("}") {
			return nil, false
		}
		w.Offset = slot(&ptrs.offsets, v)
		out = append(out, w)
		if lit(",") {
			continue
		}
		if lit("]") && i == len(p) {
			return out, true
		}
		return nil, false
	}
}
