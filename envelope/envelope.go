package envelope

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	fastb64 "github.com/segmentio/asm/base64"

	"github.com/queen-mq/queen-kafka/internal/jsontext"
)

// Header is one Kafka record header. A nil Value is a null header value.
type Header struct {
	Key   string
	Value []byte
}

// Record is a Kafka record's content as it travels through Queen (§11): nil
// Key or Value is null, distinct from an empty one. Timestamp is the
// producer's CreateTime in ms, -1 when the record carries none.
type Record struct {
	Key       []byte
	Value     []byte
	Headers   []Header
	Timestamp int64
}

// Append appends r's payload envelope to dst, keys in the order h, k,
// t, v (byte-identical to a sorted-key JSON encoder), h omitted when empty and
// t omitted when the timestamp is -1.
func Append(dst []byte, r *Record) []byte {
	dst = append(dst, '{')
	if len(r.Headers) > 0 {
		dst = append(dst, `"h":[`...)
		for i, h := range r.Headers {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"k":`...)
			dst = jsontext.AppendString(dst, h.Key)
			dst = append(dst, `,"v":`...)
			dst = appendB64(dst, h.Value)
			dst = append(dst, '}')
		}
		dst = append(dst, "],"...)
	}
	dst = append(dst, `"k":`...)
	dst = appendB64(dst, r.Key)
	if r.Timestamp >= 0 {
		dst = append(dst, `,"t":`...)
		dst = strconv.AppendInt(dst, r.Timestamp, 10)
	}
	dst = append(dst, `,"v":`...)
	dst = appendB64(dst, r.Value)
	return append(dst, '}')
}

// appendB64 writes b as a quoted standard base64 string, or null for nil.
// It encodes with segmentio/asm's vectorised encoder (AVX2 where the CPU
// has it), byte-identical to encoding/base64's StdEncoding and several
// times faster: the envelope's base64 was the top of the produce path's
// profile.
func appendB64(dst, b []byte) []byte {
	if b == nil {
		return append(dst, "null"...)
	}
	n := fastb64.StdEncoding.EncodedLen(len(b))
	dst = slices.Grow(dst, n+2)
	dst = append(dst, '"')
	at := len(dst)
	dst = dst[:at+n]
	fastb64.StdEncoding.Encode(dst[at:], b)
	return append(dst, '"')
}

// DecodePayload turns a stored payload into a Kafka record. A payload is an
// envelope only when it is strictly one (§11); anything else was written by a
// native producer and is served as no key, value = the payload's JSON text,
// timestamp = ts. ts also stands in for an envelope without t.
func DecodePayload(payload json.RawMessage, ts time.Time) Record {
	if r, ok := decodeEnvelope(payload); ok {
		if r.Timestamp < 0 {
			r.Timestamp = ts.UnixMilli()
		}
		return r
	}
	v := []byte(payload)
	if len(v) == 0 {
		v = []byte("null")
	}
	return Record{Value: v, Timestamp: ts.UnixMilli()}
}

func decodeEnvelope(p []byte) (Record, bool) {
	if r, ok := decodeCanonical(p); ok {
		return r, true
	}
	return decodeEnvelopeStrict(p)
}

// decodeCanonical reads exactly Append's bytes (keys h, k, t, v in
// that order, no whitespace, no escapes, canonical base64) in one pass. It
// answers false for anything else, including valid envelopes in another
// form, which decodeEnvelopeStrict then judges; FuzzEnvelopeFastPath checks
// that the two agree wherever this one answers.
func decodeCanonical(p []byte) (Record, bool) {
	r := Record{Timestamp: -1}
	i := 0
	lit := func(s string) bool {
		if len(p)-i < len(s) || string(p[i:i+len(s)]) != s {
			return false
		}
		i += len(s)
		return true
	}
	// b64 reads null or a quoted canonical base64 string.
	b64 := func() ([]byte, bool) {
		if lit("null") {
			return nil, true
		}
		if !lit(`"`) {
			return nil, false
		}
		end := bytes.IndexByte(p[i:], '"')
		if end < 0 {
			return nil, false
		}
		src := p[i : i+end]
		i += end + 1
		out := make([]byte, base64.StdEncoding.DecodedLen(len(src)))
		n, err := base64.StdEncoding.Strict().Decode(out, src)
		// A canonical encoding has no CR/LF (which Decode skips): its
		// length is exactly that of the re-encoding.
		if err != nil || base64.StdEncoding.EncodedLen(n) != len(src) {
			return nil, false
		}
		return out[:n:n], true
	}
	if !lit("{") {
		return Record{}, false
	}
	if lit(`"h":[`) {
		for first := true; first || lit(","); first = false {
			if !lit(`{"k":`) || i >= len(p) || p[i] != '"' {
				return Record{}, false
			}
			end, escaped, bad := jsontext.ScanString(p, i)
			if bad != "" || escaped || !utf8.Valid(p[i+1:end-1]) {
				return Record{}, false
			}
			name := p[i+1 : end-1]
			i = end
			if !lit(`,"v":`) {
				return Record{}, false
			}
			v, ok := b64()
			if !ok || !lit("}") {
				return Record{}, false
			}
			r.Headers = append(r.Headers, Header{Key: string(name), Value: v})
		}
		if !lit("],") {
			return Record{}, false
		}
	}
	var ok bool
	if !lit(`"k":`) {
		return Record{}, false
	}
	if r.Key, ok = b64(); !ok {
		return Record{}, false
	}
	if lit(`,"t":`) {
		start := i
		if i < len(p) && p[i] == '-' {
			i++
		}
		digits := i
		for i < len(p) && p[i] >= '0' && p[i] <= '9' {
			i++
		}
		// JSON integer without leading zeros; "-0" is left to the strict path.
		if i == digits || (p[digits] == '0' && (i-digits > 1 || digits > start)) {
			return Record{}, false
		}
		t, err := strconv.ParseInt(string(p[start:i]), 10, 64)
		if err != nil {
			return Record{}, false
		}
		r.Timestamp = t
	}
	if !lit(`,"v":`) {
		return Record{}, false
	}
	if r.Value, ok = b64(); !ok {
		return Record{}, false
	}
	if !lit("}") || i != len(p) {
		return Record{}, false
	}
	return r, true
}

// decodeEnvelopeStrict is the general §11 decoder: any key order,
// whitespace and escapes, strictly typed.
func decodeEnvelopeStrict(p []byte) (Record, bool) {
	p = bytes.TrimSpace(p)
	if len(p) < 2 || p[0] != '{' {
		return Record{}, false
	}
	fields, ok := objectFields(p, "h", "k", "v", "t")
	if !ok {
		return Record{}, false
	}
	kRaw, hasK := fields["k"]
	vRaw, hasV := fields["v"]
	if !hasK || !hasV {
		return Record{}, false
	}
	r := Record{Timestamp: -1}
	if r.Key, ok = decodeB64Field(kRaw); !ok {
		return Record{}, false
	}
	if r.Value, ok = decodeB64Field(vRaw); !ok {
		return Record{}, false
	}
	if tRaw, has := fields["t"]; has {
		// A JSON integer only: ParseInt refuses fractions, exponents, strings
		// and null; "-0" is a float to other JSON readers, so it is too.
		t, err := strconv.ParseInt(string(tRaw), 10, 64)
		if err != nil || string(tRaw) == "-0" {
			return Record{}, false
		}
		r.Timestamp = t
	}
	if hRaw, has := fields["h"]; has {
		var hs []json.RawMessage
		if json.Unmarshal(hRaw, &hs) != nil || hs == nil {
			return Record{}, false
		}
		r.Headers = make([]Header, 0, len(hs))
		for _, h := range hs {
			hf, ok := objectFields(bytes.TrimSpace(h), "k", "v")
			if !ok {
				return Record{}, false
			}
			var name string
			kr, hasHK := hf["k"]
			if !hasHK || json.Unmarshal(kr, &name) != nil || kr[0] != '"' {
				return Record{}, false
			}
			vr, hasHV := hf["v"]
			if !hasHV { // a header carries both k and v, like the envelope
				return Record{}, false
			}
			val, ok := decodeB64Field(vr)
			if !ok {
				return Record{}, false
			}
			r.Headers = append(r.Headers, Header{Key: name, Value: val})
		}
	}
	return r, true
}

// objectFields decodes a JSON object whose keys must all be in allowed.
func objectFields(p []byte, allowed ...string) (map[string]json.RawMessage, bool) {
	if len(p) == 0 || p[0] != '{' {
		return nil, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(p, &m) != nil {
		return nil, false
	}
	for k := range m {
		found := false
		for _, a := range allowed {
			if k == a {
				found = true
				break
			}
		}
		if !found {
			return nil, false
		}
	}
	return m, true
}

// decodeB64Field reads a base64 string or null; nil result means null.
func decodeB64Field(raw json.RawMessage) ([]byte, bool) {
	raw = bytes.TrimSpace(raw)
	if string(raw) == "null" {
		return nil, true
	}
	if len(raw) < 2 || raw[0] != '"' {
		return nil, false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return nil, false
	}
	// Go's decoder skips CR and LF even in strict mode; standard base64 as
	// the facade writes it has none.
	if strings.ContainsAny(s, "\r\n") {
		return nil, false
	}
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		return nil, false
	}
	if b == nil {
		b = []byte{}
	}
	return b, true
}
