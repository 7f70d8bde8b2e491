package queen

import (
	"encoding/json"
	"strings"
	"testing"
)

var kvSamples = append([]string{
	`{"results":[{"index":0,"op":"put","applied":true,"key":"qk:fence:billing","value":{"node":2,"incarnation":"3f2a","generation":7,"ts":1787824800123},"version":91005},{"index":1,"op":"getMany","rows":[{"key":"qk:group:b:o:3","value":{"offset":43,"metadata":"","ts":1787824800123},"version":91006,"expiresAt":null,"updatedAt":"2026-08-27T10:00:00.123456Z"}],"missing":["qk:group:b:o:4"],"truncated":false}]}`,
	`{"results":[{"index":0,"op":"getPrefix","rows":[{"key":"a","value":"eyJ4Ijox","version":1,"expiresAt":"2026-08-27T10:00:00Z","updatedAt":"t"}],"truncated":true,"nextAfter":"a"},{"index":1,"op":"get","found":false},{"index":2,"op":"put","applied":false,"reason":"version","value":null,"version":0}]}`,
	`{"ok":false,"reason":"kv_precondition","failedIndex":0,"kvReason":"version","version":5,"value":{"o":9}}`,
	`{"ok":false,"reason":"kv_precondition","failedIndex":null,"kvReason":null,"version":null,"value":null}`,
	` { "results" : [ { "index" : 0 , "op" : "delete" , "applied" : true , "value" : [ 1 , 2.5e-3 , true , null , "s" ] , "extra" : { "a" : 1 } } ] , "dashboard" : 1 } `,
	`{"results":[{"index":0,"type":"kv","opIndex":3,"op":"put","applied":true,"version":9223372036854775807}]}`,
	`{"results":null}`, `{"results":[]}`, `{}`, `null`, `{"results":[null,{"rows":null,"missing":null},{"rows":[null],"missing":[null,"k"]}]}`,
	`{"results":[{"index":-0,"op":"getMany","rows":[],"missing":[],"truncated":null,"found":null,"applied":null}]}`,
	`{"results":[{"key":"esc\"aped\u0041","rows":[{"key":"\ud83d\ude00","value":"\u00e9\n"}]}]}`, // escapes
	`{"results":[{"Index":0,"op":"put"}]}`,          // case-insensitive key
	`{"results":[{"index":0,"index":1}]}`,           // repeated key
	`{"results":[],"results":[{"index":0}]}`,        // repeated results
	`{"results":[{"key":"inv` + "\xff" + `alid"}]}`, // invalid UTF-8
	`{"resu\u006cts":[]}`,                           // escaped key
	`{"results":[{"k` + "\xc3\xa9" + `y":"x"}]}`,
}, kvAnswerSeeds...)

var kvInvalid = []string{
	``, ` `, `[]`, `"x"`, `5`, `{"results":{}}`, `{"results":[5]}`, `{"results":[{"op":5}]}`,
	`{"results":[{"index":1.0}]}`, `{"results":[{"index":1e3}]}`, `{"results":[{"index":"1"}]}`,
	`{"results":[{"version":99999999999999999999}]}`, `{"results":[{"rows":{}}]}`, `{"results":[{"missing":[1]}]}`,
	`{"results":[{"applied":"true"}]}`, `{"results":[{"applied":1}]}`, `{"results":[{"found":"x"}]}`, `{"ok":1}`,
	`{"results":[{"nextAfter":1}]}`, `{"kvReason":false}`, `{"failedIndex":"0"}`, `{"version":1.5}`,
	`{"results":[{"rows":[{"version":01}]}]}`, `{"results":[{"rows":[{"value":}]}]}`, `{"results":[{"rows":[{"expiresAt":5}]}]}`,
	`{"results":[{"value":[1,]}]}`, `{"results":[{"value":{"a" 1}}]}`, `{"value":tru}`, `{"value":-}`, `{"value":1.}`,
	`{"results":[]} x`, `{"results":[]`, `{"results":[{"key":"a` + "\n" + `"}]}`, `{"results":[{"key":"\x"}]}`,
	`{"results":[{"key":"\u12"}]}`, `{,}`, `{"a":1,}`, `{"results":[{"op":"put"},]}`,
}

// normKV makes nil and empty slices equal, where encoding/json and the
// scanner may differ only in that.
func normKV(w kvResponseWire) kvResponseWire {
	if len(w.Results) == 0 {
		w.Results = nil
	}
	for i := range w.Results {
		r := &w.Results[i]
		if len(r.Rows) == 0 {
			r.Rows = nil
		}
		if len(r.Missing) == 0 {
			r.Missing = nil
		}
	}
	return w
}

func TestKVDecodeMatchesEncodingJSON(t *testing.T) {
	checkDecoderSamples(t, kvSamples, kvInvalid, decodeKVResponse, normKV)
}

// Every proper prefix of a valid answer is refused: a body cut short is
// never taken for a shorter one.
func TestKVDecodeRefusesEveryTruncation(t *testing.T) {
	for _, in := range kvSamples {
		if strings.TrimSpace(in) == "null" {
			continue
		}
		trimmed := strings.TrimRight(in, " ")
		for n := 0; n < len(trimmed); n++ {
			if _, err := decodeKVResponse([]byte(trimmed[:n])); err == nil {
				t.Fatalf("accepted %q, a truncation of %q", trimmed[:n], in)
			}
		}
	}
}

// The values alias the body (no copy) but cannot be grown into it.
func TestKVDecodeValueAliasing(t *testing.T) {
	body := []byte(`{"results":[{"index":0,"op":"getMany","rows":[{"key":"a","value":{"x":1},"version":1},{"key":"b","value":"y","version":2}]}]}`)
	got, err := decodeKVResponse(body)
	if err != nil {
		t.Fatal(err)
	}
	rows := got.Results[0].Rows
	if string(rows[0].Value) != `{"x":1}` || string(rows[1].Value) != `"y"` {
		t.Fatalf("values %s %s", rows[0].Value, rows[1].Value)
	}
	if &rows[0].Value[0] != &body[strings.Index(string(body), `{"x"`)] {
		t.Fatal("the value was copied")
	}
	_ = append(rows[0].Value, '!')
	if !strings.Contains(string(body), `{"x":1},"version"`) {
		t.Fatal("appending to a value wrote into the body")
	}
}

func FuzzKVDecode(f *testing.F) {
	fuzzDecoder(f, kvSamples, kvInvalid, decodeKVResponse, normKV)
}

// BenchmarkKVDecode: a stage page's answer (64 rows of 45,000 bytes of
// base64), by the scanner and by encoding/json.
func BenchmarkKVDecode(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"results":[{"index":0,"op":"getPrefix","rows":[`)
	for i := range 64 {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"key":"qk:txnstage:bench:7:0:1:r:out:0:0000000000:` + strings.Repeat("0", 4) + `","value":{"q":"out","p":0,"n":1,"d":"` + strings.Repeat("eHl6", 15000) + `"},"version":1,"expiresAt":"2026-12-05T10:00:00Z","updatedAt":"2026-12-05T10:00:00Z"}`)
	}
	sb.WriteString(`],"truncated":false}]}`)
	body := []byte(sb.String())
	b.Run("scanner", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeKVResponse(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			var w kvResponseWire
			if err := json.Unmarshal(body, &w); err != nil {
				b.Fatal(err)
			}
		}
	})
}
