package queen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/queen-mq/queen-kafka/internal/jsontext"
)

// errFallback asks for the encoding/json path.
var errFallback = errors.New("fallback to encoding/json")

// scanner is the one-pass JSON reader under the client's push and fetch
// answer decoders: strings go through jsontext.ScanString, and every shape where
// encoding/json has rules of its own returns errFallback so that the caller
// decodes the whole body with encoding/json instead.
type scanner struct {
	b []byte
	i int
}

// errf says where in the body decoding stopped; the route (push or fetch)
// is named by the *Error that wraps it.
func (s *scanner) errf(format string, args ...any) error {
	return fmt.Errorf("response at byte %d: %s", s.i, fmt.Sprintf(format, args...))
}

func (s *scanner) ws() { s.i = jsontext.SkipSpace(s.b, s.i) }

// peek skips whitespace and returns the next byte (0 at the end).
func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) literal(lit string) error {
	if !bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		return s.errf("invalid literal")
	}
	s.i += len(lit)
	return nil
}

// null consumes a null literal if one is next.
func (s *scanner) null() (bool, error) {
	if s.peek() != 'n' {
		return false, nil
	}
	return true, s.literal("null")
}

// object iterates an object's members; each calls member with the raw key
// bytes (undecoded) positioned at the value.
func (s *scanner) object(member func(key []byte) error) error {
	if s.peek() != '{' {
		return s.errf("want an object")
	}
	s.i++
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		if s.peek() != '"' {
			return s.errf("want a member name")
		}
		key, escaped, err := s.stringSpan()
		if err != nil {
			return err
		}
		if escaped {
			return errFallback // a key spelled with escapes: let encoding/json match it
		}
		if s.peek() != ':' {
			return s.errf("want ':'")
		}
		s.i++
		s.ws()
		if err := member(key); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.errf("want ',' or '}'")
		}
	}
}

// array iterates an array's elements.
func (s *scanner) array(elem func() error) error {
	if s.peek() != '[' {
		return s.errf("want an array")
	}
	s.i++
	if s.peek() == ']' {
		s.i++
		return nil
	}
	for {
		s.ws()
		if err := elem(); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return s.errf("want ',' or ']'")
		}
	}
}

// decodeWhole decodes body as one top-level value with top and refuses
// anything after it; a shape top hands over (errFallback) is decoded by
// encoding/json into a zero T instead, so the answer is always what
// json.Unmarshal gives. Every one-pass answer decoder is this shell.
func decodeWhole[T any](body []byte, top func(*scanner) (T, error)) (T, error) {
	s := scanner{b: body}
	out, err := top(&s)
	if err == nil {
		s.ws()
		if s.i != len(s.b) {
			err = s.errf("data after the top-level value")
		}
	}
	if errors.Is(err, errFallback) {
		var zero T
		out = zero
		err = json.Unmarshal(body, &out)
	}
	return out, err
}

// nullable decodes null (into nil) or a value by read: what encoding/json
// makes of a pointer field.
func nullable[T any](s *scanner, read func() (T, error)) (*T, error) {
	if isNull, err := s.null(); isNull || err != nil {
		return nil, err
	}
	v, err := read()
	return &v, err
}

// list decodes null (into nil) or an array, each element by elem into a
// zero T appended to dst[:0]: what encoding/json makes of a slice field.
// elem fills the element in place, so it is never copied or moved to the
// heap on its own.
func list[T any](s *scanner, dst []T, elem func(*T) error) ([]T, error) {
	if isNull, err := s.null(); isNull || err != nil {
		return nil, err
	}
	dst = dst[:0]
	err := s.array(func() error {
		var zero T
		dst = append(dst, zero)
		return elem(&dst[len(dst)-1])
	})
	return dst, err
}

// stringSpan consumes a string and returns its bytes between the quotes
// and whether it holds an escape or a byte that is not valid UTF-8.
func (s *scanner) stringSpan() (span []byte, odd bool, err error) {
	start := s.i + 1
	end, escaped, bad := jsontext.ScanString(s.b, s.i)
	s.i = end
	if bad != "" {
		return nil, false, s.errf("%s", bad)
	}
	span = s.b[start : end-1]
	return span, escaped || !utf8.Valid(span), nil
}

// str decodes a string value (null leaves it empty, as encoding/json does).
func (s *scanner) str() (string, error) { return s.strOf() }

// strToken consumes a string value or null: raw is the quoted token (nil
// for null), span the text between its quotes, and odd tells that it has
// escapes or invalid UTF-8, which only encoding/json's rules decode.
func (s *scanner) strToken() (raw, span []byte, odd bool, err error) {
	if isNull, err := s.null(); isNull || err != nil {
		return nil, nil, false, err
	}
	if s.peek() != '"' {
		return nil, nil, false, s.errf("want a string")
	}
	start := s.i
	span, odd, err = s.stringSpan()
	return s.b[start:s.i], span, odd, err
}

// strOf is str, answering a value that is one of known with that string
// rather than a copy: a transaction's answer names its results' type
// ("push", "kv") tens of thousands of times.
func (s *scanner) strOf(known ...string) (string, error) {
	raw, span, odd, err := s.strToken()
	if err != nil || raw == nil {
		return "", err
	}
	if !odd {
		for _, k := range known {
			if string(span) == k {
				return k, nil
			}
		}
		return string(span), nil
	}
	var v string // escapes and invalid UTF-8: encoding/json's exact rules
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", err
	}
	return v, nil
}

// checkedStr consumes a string value as str does, refusing what str
// refuses, and returns "": the value is not kept.
func (s *scanner) checkedStr() (string, error) {
	raw, _, odd, err := s.strToken()
	if err != nil || !odd {
		return "", err
	}
	var v string
	return "", json.Unmarshal(raw, &v)
}

// number consumes a JSON number and returns its text.
func (s *scanner) number() ([]byte, error) {
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	intStart := s.i
	n := digits()
	if n == 0 || (n > 1 && s.b[intStart] == '0') {
		return nil, s.errf("invalid number")
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return nil, s.errf("invalid number")
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return nil, s.errf("invalid number")
		}
	}
	return s.b[start:s.i], nil
}

// int64 decodes an integer value (null leaves 0); a fraction, an exponent
// or an overflow is an error, never a float64 round trip.
func (s *scanner) int64() (int64, error) {
	if isNull, err := s.null(); isNull || err != nil {
		return 0, err
	}
	c := s.peek()
	if c != '-' && (c < '0' || c > '9') {
		return 0, s.errf("want an integer")
	}
	num, err := s.number()
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(string(num), 10, 64)
	if err != nil {
		return 0, s.errf("want an int64, got %s", num)
	}
	return v, nil
}

// value consumes any JSON value, validating it, and returns its bytes.
func (s *scanner) value() ([]byte, error) {
	start := s.i
	var err error
	switch c := s.peek(); {
	case c == '{':
		err = s.object(func([]byte) error { _, err := s.value(); return err })
	case c == '[':
		err = s.array(func() error { _, err := s.value(); return err })
	case c == '"':
		_, _, err = s.stringSpan()
	case c == 't':
		err = s.literal("true")
	case c == 'f':
		err = s.literal("false")
	case c == 'n':
		err = s.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		_, err = s.number()
	default:
		err = s.errf("want a value")
	}
	if err != nil {
		return nil, err
	}
	return s.b[start:s.i], nil
}

// fields tracks which known member names an object has shown.
type fields uint32 // up to 32 names

// known reports which of names key is ("" for none). A repeated name (whose
// merge rules encoding/json defines), an unknown key that matches a name
// case-insensitively (as encoding/json would) or one holding non-ASCII
// (Unicode case folding) takes the fallback.
func (f *fields) known(key []byte, names ...string) (string, error) {
	for i, n := range names {
		if string(key) == n {
			if *f&(1<<i) != 0 {
				return "", errFallback
			}
			*f |= 1 << i
			return n, nil
		}
	}
	for _, c := range key {
		if c >= utf8.RuneSelf {
			return "", errFallback
		}
	}
	for _, n := range names {
		if bytes.EqualFold(key, []byte(n)) {
			return "", errFallback
		}
	}
	return "", nil
}
