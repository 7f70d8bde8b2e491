package envelope

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

var recordTS = time.Date(2026, 8, 28, 9, 15, 0, 123456000, time.UTC)

// sortedKeyEncoding renders r the way a generic sorted-key JSON encoder
// would (encoding/json sorts map keys), the reference Append must
// match byte for byte.
func sortedKeyEncoding(t *testing.T, r *Record) []byte {
	t.Helper()
	b64 := func(b []byte) any {
		if b == nil {
			return nil
		}
		return base64.StdEncoding.EncodeToString(b)
	}
	m := map[string]any{"k": b64(r.Key), "v": b64(r.Value)}
	if len(r.Headers) > 0 {
		hs := make([]map[string]any, len(r.Headers))
		for i, h := range r.Headers {
			hs[i] = map[string]any{"k": h.Key, "v": b64(h.Value)}
		}
		m["h"] = hs
	}
	if r.Timestamp != -1 {
		m["t"] = r.Timestamp
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		t.Fatal(err)
	}
	out := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	// encoding/json escapes three code points the reference encoder
	// (serde_json) writes raw; undo exactly those.
	for _, cp := range []string{`\u2028`, `\u2029`, `\ufffd`} {
		var s string
		_ = json.Unmarshal([]byte(`"`+cp+`"`), &s)
		out = bytes.ReplaceAll(out, []byte(cp), []byte(s))
	}
	return out
}

func TestEnvelopeRoundTrip(t *testing.T) {
	cases := map[string]Record{
		"null key and value":   {Key: nil, Value: nil, Timestamp: -1},
		"empty key and value":  {Key: []byte{}, Value: []byte{}, Timestamp: 0},
		"null key empty value": {Key: nil, Value: []byte{}, Timestamp: 1787824800123},
		"binary":               {Key: []byte{0, 0xff, 0xfe, '"', '\\'}, Value: []byte{0x80, 0x81, 0, 1, 2}, Timestamp: 1},
		"every padding":        {Key: []byte("a"), Value: []byte("ab"), Headers: []Header{{Key: "x", Value: []byte("abc")}}, Timestamp: -1},
		"headers null and repeats": {Key: []byte("order-42"), Value: []byte(`{"total":12}`), Timestamp: 1787824800123,
			Headers: []Header{{Key: "content-type", Value: []byte("application/json")}, {Key: "x", Value: nil},
				{Key: "x", Value: []byte{}}, {Key: "x", Value: []byte("again")}}},
		"odd header names": {Value: []byte("v"), Timestamp: -1,
			Headers: []Header{{Key: "", Value: []byte("e")}, {Key: "q\"uote\\back\nnl\x01<&>\b\f\r\t\x1f\x7f\u2028", Value: nil}, {Key: "ünï✓", Value: []byte{0}}}},
		"max timestamp": {Value: []byte("v"), Timestamp: 1<<63 - 1},
	}
	for name, r := range cases {
		t.Run(name, func(t *testing.T) {
			enc := Append(nil, &r)
			if want := sortedKeyEncoding(t, &r); !bytes.Equal(enc, want) {
				t.Fatalf("not byte-identical to a sorted-key encoder\n got %s\nwant %s", enc, want)
			}
			if !json.Valid(enc) {
				t.Fatalf("invalid JSON %s", enc)
			}
			got := DecodePayload(enc, recordTS)
			want := r
			if want.Timestamp == -1 {
				want.Timestamp = recordTS.UnixMilli()
			}
			if len(want.Headers) == 0 {
				want.Headers = nil
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("round trip\n got %#v\nwant %#v", got, want)
			}
			// nil vs empty must survive: reflect.DeepEqual tells []byte{} from nil.
			if (got.Key == nil) != (r.Key == nil) || (got.Value == nil) != (r.Value == nil) {
				t.Fatal("null/empty distinction lost")
			}
		})
	}
}

func TestEnvelopeEncodingShape(t *testing.T) {
	r := Record{Key: []byte("order-42"), Value: []byte(`{"total":12}`), Timestamp: 1787824800123,
		Headers: []Header{{Key: "content-type", Value: []byte("application/json")}}}
	want := `{"h":[{"k":"content-type","v":"YXBwbGljYXRpb24vanNvbg=="}],"k":"b3JkZXItNDI=","t":1787824800123,"v":"eyJ0b3RhbCI6MTJ9"}`
	if got := string(Append(nil, &r)); got != want {
		t.Fatalf("§11 example\n got %s\nwant %s", got, want)
	}
	if got := string(Append([]byte("prefix"), &Record{Timestamp: -1})); got != `prefix{"k":null,"v":null}` {
		t.Fatalf("append / h and t omitted: %s", got)
	}
}

func TestDecodeAcceptsAnyOrderAndWhitespace(t *testing.T) {
	p := `{ "v" : "eA==", "t":5, "k":null, "h":[ {"v":null,"k":"a"} ] }`
	got := DecodePayload(json.RawMessage(p), recordTS)
	want := Record{Key: nil, Value: []byte("x"), Timestamp: 5, Headers: []Header{{Key: "a"}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%#v", got)
	}
	// Empty header list is still an envelope; no t takes the record ts.
	got = DecodePayload(json.RawMessage(`{"h":[],"k":"","v":""}`), recordTS)
	if got.Key == nil || len(got.Key) != 0 || got.Timestamp != recordTS.UnixMilli() || len(got.Headers) != 0 {
		t.Fatalf("%#v", got)
	}
}

func TestDecodeNativeFallback(t *testing.T) {
	native := []string{
		`{"k":"eA==","v":"eA==","x":1}`,                      // extra key
		`{"k":"eA=="}`,                                       // missing v
		`{"v":"eA=="}`,                                       // missing k
		`{"k":1,"v":"eA=="}`,                                 // k wrong type
		`{"k":"eA==","v":true}`,                              // v wrong type
		`{"k":"eA==","v":["eA=="]}`,                          // v array
		`{"k":"not base64!","v":null}`,                       // bad base64
		`{"k":"eA","v":null}`,                                // missing padding
		`{"k":"eB==","v":null}`,                              // non-canonical trailing bits
		`{"k":"eA==\n","v":null}`,                            // newline inside base64
		`{"k":"-_8=","v":null}`,                              // URL alphabet
		`{"k":null,"v":null,"t":"5"}`,                        // t string
		`{"k":null,"v":null,"t":1.5}`,                        // t fraction
		`{"k":null,"v":null,"t":1e3}`,                        // t exponent
		`{"k":null,"v":null,"t":null}`,                       // t null
		`{"k":null,"v":null,"t":-0}`,                         // t -0
		`{"k":null,"v":null,"t":99999999999999999999}`,       // t overflow
		`{"k":null,"v":null,"h":null}`,                       // h null
		`{"k":null,"v":null,"h":{}}`,                         // h object
		`{"k":null,"v":null,"h":["x"]}`,                      // header not an object
		`{"k":null,"v":null,"h":[{"k":"a"}]}`,                // header without v
		`{"k":null,"v":null,"h":[{"v":null}]}`,               // header without k
		`{"k":null,"v":null,"h":[{"k":"a","v":null,"x":1}]}`, // header extra key
		`{"k":null,"v":null,"h":[{"k":null,"v":null}]}`,      // header k null
		`{"k":null,"v":null,"h":[{"k":1,"v":null}]}`,         // header k number
		`{"k":null,"v":null,"h":[{"k":"a","v":"%%"}]}`,       // header bad base64
		`{"K":null,"v":null}`,                                // case matters
		`{}`, `[]`, `"text"`, `42`, `null`, `true`, `[{"k":null,"v":null}]`,
	}
	for _, p := range native {
		got := DecodePayload(json.RawMessage(p), recordTS)
		want := Record{Value: []byte(p), Timestamp: recordTS.UnixMilli()}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: not served as a native payload: %#v", p, got)
		}
	}
	if got := DecodePayload(nil, recordTS); string(got.Value) != "null" || got.Key != nil {
		t.Errorf("empty payload: %#v", got)
	}
}

// FuzzEnvelope: every record survives Append → DecodePayload, the
// encoding is valid JSON identical to a sorted-key encoder, and decoding
// arbitrary bytes never panics.
func FuzzEnvelope(f *testing.F) {
	f.Add([]byte("key"), []byte("value"), "h", []byte("hv"), int64(1787824800123), uint8(3))
	f.Add([]byte{}, []byte{0xff}, "", []byte{}, int64(-1), uint8(0))
	f.Add([]byte(`{"k":null,"v":null}`), []byte(`{"h":[]}`), "\x00<", []byte(nil), int64(0), uint8(1))
	f.Fuzz(func(t *testing.T, key, value []byte, hname string, hval []byte, ts int64, flags uint8) {
		if ts < -1 {
			ts = -1
		}
		r := Record{Key: key, Value: value, Timestamp: ts}
		if flags&1 != 0 {
			r.Key = nil
		}
		if flags&2 != 0 {
			r.Value = nil
		}
		if flags&4 != 0 {
			r.Headers = []Header{{Key: hname, Value: hval}, {Key: hname, Value: nil}}
		}
		enc := Append(nil, &r)
		// JSON text carries no invalid UTF-8: the encoder writes U+FFFD for
		// it, so the decoded name is compared against that replacement.
		for i := range r.Headers {
			r.Headers[i].Key = string([]rune(r.Headers[i].Key)) // one U+FFFD per invalid byte
		}
		if !bytes.Equal(enc, sortedKeyEncoding(t, &r)) {
			t.Fatalf("not sorted-key identical: %s", enc)
		}
		got := DecodePayload(enc, recordTS)
		want := r
		if want.Timestamp == -1 {
			want.Timestamp = recordTS.UnixMilli()
		}
		if !bytes.Equal(got.Key, want.Key) || (got.Key == nil) != (want.Key == nil) ||
			!bytes.Equal(got.Value, want.Value) || (got.Value == nil) != (want.Value == nil) ||
			got.Timestamp != want.Timestamp || len(got.Headers) != len(want.Headers) {
			t.Fatalf("round trip: got %#v want %#v", got, want)
		}
		for i := range got.Headers {
			g, w := got.Headers[i], want.Headers[i]
			if g.Key != w.Key || !bytes.Equal(g.Value, w.Value) || (g.Value == nil) != (w.Value == nil) {
				t.Fatalf("header %d: got %#v want %#v", i, g, w)
			}
		}
		// Arbitrary bytes as a payload: never a panic, and whatever is not
		// an envelope comes back verbatim as a key-less value.
		if _, isEnv := decodeEnvelope(value); !isEnv && len(value) > 0 {
			d := DecodePayload(json.RawMessage(value), recordTS)
			if d.Key != nil || d.Headers != nil || !bytes.Equal(d.Value, value) || d.Timestamp != recordTS.UnixMilli() {
				t.Fatalf("native payload not served as itself: %q → %#v", value, d)
			}
		}
	})
}

// FuzzEnvelopeFastPath: wherever the canonical one-pass reader answers, the
// strict decoder agrees; and every Append output whose header names
// need no JSON escape takes the fast path.
func FuzzEnvelopeFastPath(f *testing.F) {
	f.Add([]byte(`{"h":[{"k":"content-type","v":"YXBwbGljYXRpb24vanNvbg=="}],"k":"b3JkZXItNDI=","t":1787824800123,"v":"eyJ0b3RhbCI6MTJ9"}`), "n", []byte("v"))
	f.Add([]byte(`{"k":null,"v":""}`), "", []byte(nil))
	f.Add([]byte(`{"k":"a\/8=","t":-0,"v":null}`), "a\"b", []byte{0})
	f.Fuzz(func(t *testing.T, p []byte, hname string, hval []byte) {
		if fast, ok := decodeCanonical(p); ok {
			strict, sok := decodeEnvelopeStrict(p)
			if !sok || !reflect.DeepEqual(fast, strict) {
				t.Fatalf("fast path disagrees on %q\nfast   %#v\nstrict %#v (%v)", p, fast, strict, sok)
			}
		}
		r := Record{Key: p, Value: hval, Timestamp: int64(len(p)) - 1, Headers: []Header{{Key: hname, Value: hval}}}
		enc := Append(nil, &r)
		plain := utf8.ValidString(hname) && !strings.ContainsAny(hname, "\"\\")
		for _, c := range []byte(hname) {
			plain = plain && c >= 0x20
		}
		if _, ok := decodeCanonical(enc); plain && !ok {
			t.Fatalf("our own encoding missed the fast path: %s", enc)
		}
	})
}

// TestB64MatchesStd: the vectorised encoder writes exactly what
// encoding/base64's StdEncoding writes, at every length around its block
// sizes and on random bytes, and nil stays null.
func TestB64MatchesStd(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	src := make([]byte, 4096)
	for i := range src {
		src[i] = byte(rng.Uint32())
	}
	for n := 0; n <= 1100; n++ {
		want := `"` + base64.StdEncoding.EncodeToString(src[n:2*n]) + `"`
		require.Equal(t, want, string(appendB64([]byte{}, src[n:2*n])), "length %d", n)
		// Appending after existing bytes keeps them.
		require.Equal(t, "x"+want, string(appendB64([]byte("x"), src[n:2*n])), "length %d", n)
	}
	require.Equal(t, "null", string(appendB64(nil, nil)))
	require.Equal(t, `""`, string(appendB64(nil, []byte{})))
}
