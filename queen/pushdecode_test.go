package queen

import (
	"encoding/json"
	"strings"
	"testing"
)

var pushSamples = []string{
	`[{"index":0,"message_id":"0190aaaa-0000-7000-8000-000000000001","transaction_id":"0190aaaa-0000-7000-8000-000000000001","queueName":"orders","status":"queued","offset":41},
 {"index":1,"message_id":"0190aaaa-0000-7000-8000-000000000002","transaction_id":"0190aaaa-0000-7000-8000-000000000002","queueName":"orders","status":"queued","offset":42}]`,
	` [ { "status" : "buffered" , "index" : 2 , "queueName":"q" } , {"index":1,"status":"duplicate","offset":0,"extra":{"a":[1,2.5e-3,true,false,null,"s"]}} ] `,
	`[{"index":0,"status":"error","offset":null},{"index":null,"status":"weird","offset":9223372036854775807},{"index":-0,"offset":-3}]`,
	`null`, `[]`, `[null]`, `[{}]`, `[{"message_id":null,"queueName":null}]`,
	`[{"queueName":"esc\"aped\u0041","status":"\u0071ueued"}]`,           // escapes
	`[{"Index":3,"status":"queued"}]`,                                    // case-insensitive key
	`[{"index":1,"index":2}]`,                                            // repeated key
	`[{"queueName":"inv` + "\xff" + `alid"}]`,                            // invalid UTF-8
	`[{"st\u0061tus":"queued"}]`,                                         // escaped key
	`[{"qu` + "\xc3\xa9" + `ueName":"x"}]`,                               // non-ASCII key
	`[{"queueName":"` + "\xc3\xa9\xe2\x82\xac" + `","status":"queued"}]`, // valid UTF-8 value
	// The canonical shape (decodeCanonicalPush) and its near misses.
	canonicalPush(0, "orders", "queued", "41") + "," + canonicalPush(1, "orders", "duplicate", "0")[1:] + "]",
	canonicalPush(0, "del\x7fquote", "queued", "123456789012345678") + "]",              // DEL, 18 digits
	canonicalPush(0, "q", "queued", "1234567890123456789") + "]",                        // 19 digits
	canonicalPush(0, "caf\xc3\xa9", "queued", "7") + "]",                                // non-ASCII
	canonicalPush(0, `esc\"aped`, "queued", "7") + "]",                                  // an escape
	canonicalPush(0, "q", "queued", "-0") + "]",                                         // a sign
	canonicalPush(0, "q", "queued", "7") + "] ",                                         // trailing space
	canonicalPush(0, "q", "queued", "7") + `,{"index":1,"status":"queued","offset":8}]`, // a short result after
}

// canonicalPush is one result as a Queen broker renders it, opening an
// array: the caller closes it.
func canonicalPush(i int, queue, status, offset string) string {
	return `[{"index":` + itoa(i) + `,"message_id":"0190aaaa-0000-7000-8000-00000000000` + itoa(i) + `","transaction_id":"kafka:7:0:` + itoa(i) +
		`","queueName":"` + queue + `","status":"` + status + `","offset":` + offset + `}`
}

var pushInvalid = []string{
	``, ` `, `{}`, `"x"`, `5`, `[5]`, `[[]]`, `[{"index":"1"}]`, `[{"index":1.0}]`, `[{"index":1e3}]`,
	`[{"index":99999999999999999999}]`, `[{"offset":1.5}]`, `[{"offset":"1"}]`, `[{"status":5}]`,
	`[{"queueName":true}]`, `[{"index":01}]`, `[{"extra":}]`, `[{"extra":[1,]}]`, `[{"a" 1}]`,
	`[] x`, `[{}`, `[{"status":"a` + "\n" + `"}]`, `[{"status":"\x"}]`, `[{"status":"\u12"}]`,
	`[{"extra":tru}]`, `[{"offset":-}]`, `[{,}]`, `[{"a":1,}]`, `[,]`, `[{}{}]`,
	canonicalPush(0, "q", "queued", "07") + "]", canonicalPush(0, "q", "queued", "99999999999999999999") + "]",
	canonicalPush(0, "q\x01", "queued", "7") + "]", canonicalPush(0, "q", "queued", "7") + ",]",
	canonicalPush(0, "q", "queued", "7") + "] x", canonicalPush(0, "q", "queued", "7"), canonicalPush(0, "q", "queued", "7.5") + "]",
}

// normPush makes nil and empty result lists compare equal.
func normPush(rs []pushResultWire) []pushResultWire {
	if len(rs) == 0 {
		return nil
	}
	return rs
}

// TestPushDecodeCanonical: a broker's own rendering takes the one-pass
// literal path (and the samples above hold it to encoding/json); a near
// miss is left to the general scanner.
func TestPushDecodeCanonical(t *testing.T) {
	body := canonicalPush(0, "orders", "queued", "41") + "," + canonicalPush(1, "orders", "duplicate", "0")[1:] + "]"
	got, ok := decodeCanonicalPush([]byte(body), body)
	if !ok || len(got) != 2 || *got[1].Index != 1 || *got[1].Offset != 0 || got[1].Status != StatusDuplicate || got[0].QueueName != "orders" || got[0].TransactionID != "kafka:7:0:0" {
		t.Fatalf("canonical answer: ok=%v %+v", ok, got)
	}
	for _, near := range []string{canonicalPush(0, "caf\xc3\xa9", "queued", "7") + "]", canonicalPush(0, "q", "queued", "7") + "] ", canonicalPush(0, "q", "queued", "-1") + "]"} {
		if _, ok := decodeCanonicalPush([]byte(near), near); ok {
			t.Fatalf("took the literal path: %s", near)
		}
	}
}

func TestPushDecodeMatchesEncodingJSON(t *testing.T) {
	checkDecoderSamples(t, pushSamples, pushInvalid, decodePushResponse, normPush)
}

// TestPushDecodeIndexesDistinct: the Index and Offset pointers share blocks of
// one backing store each; every pointer must still point at its own value.
func TestPushDecodeIndexesDistinct(t *testing.T) {
	var b strings.Builder
	b.WriteString("[")
	for i := 0; i < 100; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"index":` + itoa(i) + `,"status":"queued","offset":` + itoa(1000+i) + `}`)
	}
	b.WriteString("]")
	got, err := decodePushResponse([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range got {
		if *w.Index != i || *w.Offset != int64(1000+i) || w.Status != StatusQueued {
			t.Fatalf("result %d: index %d offset %d status %q", i, *w.Index, *w.Offset, w.Status)
		}
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// FuzzPushDecode: the one-pass decoder never accepts what encoding/json
// refuses, and whatever it accepts decodes exactly as encoding/json does.
func FuzzPushDecode(f *testing.F) {
	fuzzDecoder(f, pushSamples, pushInvalid, decodePushResponse, normPush)
}

// TestPushDecodeErrorNamesNoFetch: the scanner is shared with the fetch
// decoder; a bad push answer must not be reported as a fetch response.
func TestPushDecodeErrorNamesNoFetch(t *testing.T) {
	_, err := decodePushResponse([]byte(`[{"index":"1"}]`))
	if err == nil || strings.Contains(err.Error(), "fetch") || !strings.Contains(err.Error(), "at byte") {
		t.Fatalf("err = %v", err)
	}
}
