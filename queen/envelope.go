package queen

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"time"
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

// AppendEnvelope appends r's payload envelope to dst, keys in the order h, k,
// t, v (byte-identical to a sorted-key JSON encoder), h omitted when empty and
// t omitted when the timestamp is -1.
func AppendEnvelope(dst []byte, r *Record) []byte {
	dst = append(dst, '{')
	if len(r.Headers) > 0 {
		dst = append(dst, `"h":[`...)
		for i, h := range r.Headers {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"k":`...)
			dst = appendJSONString(dst, h.Key)
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

func appendB64(dst, b []byte) []byte {
	if b == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"')
}

func appendJSONString(dst []byte, s string) []byte {
	simple := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			simple = false
			break
		}
	}
	if simple {
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"')
	}
	b, _ := json.Marshal(s) // escapes invalid UTF-8 as U+FFFD, as any JSON encoder must
	return append(dst, b...)
}

// envelope is the strict decoding shape of §11.
type envelope struct {
	H []json.RawMessage `json:"h"`
	K json.RawMessage   `json:"k"`
	V json.RawMessage   `json:"v"`
	T json.RawMessage   `json:"t"`
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
		t, err := strconv.ParseInt(string(tRaw), 10, 64)
		if err != nil {
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
			var val []byte
			if vr, has := hf["v"]; has {
				if val, ok = decodeB64Field(vr); !ok {
					return Record{}, false
				}
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
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		return nil, false
	}
	if b == nil {
		b = []byte{}
	}
	return b, true
}

// ParseTS parses a fetch record's ts (§0: UTC, microseconds); a zero time
// when it does not parse.
func ParseTS(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// FormatTS renders t in the §0 record-time format.
func FormatTS(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000000Z")
}
