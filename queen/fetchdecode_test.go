package queen

import (
	"strings"
	"testing"
)

var fetchSamples = []string{
	`{"entries":[{"queue":"orders","partition":"3","records":[{"offset":41,"transactionId":"a","payload":{"k":"a2V5LTE=","t":1787824800123,"v":"eyJuIjoxfQ=="},"ts":"2026-08-28T09:15:00.123456Z"},{"offset":42,"transactionId":"b","payload":{"k":null,"v":"eA=="},"ts":"2026-08-28T09:15:00.123456Z"}],"highWatermark":43,"logStartOffset":0},{"queue":"orders","partition":"9","records":[],"highWatermark":0,"logStartOffset":0}]}`,
	` { "entries" : [ { "error" : "UNKNOWN_TOPIC_OR_PARTITION" , "queue":"x","partition":"0","records":[],"highWatermark":0,"logStartOffset":0,"extra":{"a":[1,2.5e-3,true,false,null,"s"]} } ] , "dashboard":1 } `,
	`{"entries":[{"queue":"q","partition":"0","records":[{"offset":9007199254740993,"payload":null,"ts":"t"},{"offset":1,"payload":"\u00e9\n","ts":"t"},{"offset":2,"payload":[1,{"x":"y"}],"ts":"t"},{"offset":3,"payload":-0.5E+7,"ts":"t"}],"highWatermark":9223372036854775807,"logStartOffset":-1}]}`,
	`{"entries":null}`, `{"entries":[]}`, `{}`, `null`, `{"entries":[null,{"records":null},{"records":[null]}]}`,
	`{"entries":[{"queue":"esc\"aped\u0041","partition":"\ud83d\ude00","records":[]}]}`, // escapes
	`{"entries":[{"Queue":"folded","partition":"0"}]}`,                                  // case-insensitive key
	`{"entries":[{"queue":"a","queue":"b"}]}`,                                           // repeated key
	`{"entries":[{"queue":"a","partition":"p"}],"entries":[{"queue":"b"}]}`,             // repeated entries
	`{"entries":[{"queue":"inv` + "\xff" + `alid"}]}`,                                   // invalid UTF-8
	`{"entr\u0069es":[]}`, // escaped key
	`{"entries":[{"qu` + "\xc3\xa9" + `ue":"x"}]}`,
}

var fetchInvalid = []string{
	``, ` `, `[]`, `"x"`, `5`, `{"entries":{}}`, `{"entries":[5]}`, `{"entries":[{"queue":5}]}`,
	`{"entries":[{"highWatermark":1.0}]}`, `{"entries":[{"highWatermark":1e3}]}`, `{"entries":[{"highWatermark":"1"}]}`,
	`{"entries":[{"highWatermark":99999999999999999999}]}`, `{"entries":[{"records":{}}]}`,
	`{"entries":[{"records":[{"offset":01}]}]}`, `{"entries":[{"records":[{"payload":}]}]}`,
	`{"entries":[{"records":[{"payload":[1,]}]}]}`, `{"entries":[{"records":[{"payload":{"a" 1}}]}]}`,
	`{"entries":[]} x`, `{"entries":[]`, `{"entries":[{"queue":"a` + "\n" + `"}]}`, `{"entries":[{"queue":"\x"}]}`,
	`{"entries":[{"queue":"\u12"}]}`, `{"entries":[{"records":[{"payload":tru}]}]}`, `{"entries":[{"records":[{"payload":-}]}]}`,
	`{"entries":[{"records":[{"payload":1.}]}]}`, `{"entries":[{"records":[{"payload":.5}]}]}`, `{,}`, `{"a":1,}`,
}

func TestFetchDecodeMatchesEncodingJSON(t *testing.T) {
	checkDecoderSamples(t, fetchSamples, fetchInvalid, decodeFetchResponse, normFetch)
}

func TestFetchDecodePayloadAliasing(t *testing.T) {
	body := []byte(`{"entries":[{"queue":"q","partition":"0","records":[{"offset":0,"payload":{"a":1}},{"offset":1,"payload":2}]}]}`)
	got, err := decodeFetchResponse(body)
	if err != nil {
		t.Fatal(err)
	}
	p := got.Entries[0].Records[0].Payload
	if string(p) != `{"a":1}` || cap(p) != len(p) {
		t.Fatalf("payload %q cap %d", p, cap(p))
	}
	_ = append(p, 'X') // must not write into the body
	if !strings.Contains(string(body), `{"a":1}},{"offset":1`) {
		t.Fatalf("append through a payload changed the body: %s", body)
	}
}

// normFetch makes nil and empty slices compare equal where encoding/json
// and the scanner may differ only in that.
func normFetch(r FetchResponse) FetchResponse {
	for i := range r.Entries {
		if len(r.Entries[i].Records) == 0 {
			r.Entries[i].Records = nil
		}
	}
	if len(r.Entries) == 0 {
		r.Entries = nil
	}
	return r
}

// FuzzFetchDecode: the one-pass decoder never accepts what encoding/json
// refuses, and whatever it accepts decodes exactly as encoding/json does.
func FuzzFetchDecode(f *testing.F) {
	fuzzDecoder(f, fetchSamples, fetchInvalid, decodeFetchResponse, normFetch)
}
