package dev

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

var kvSplitBodies = []string{
	`{"operations":[{"op":"put","ns":"queen-kafka","key":"qk:txnstage:a:7:0:1:r:out:0:0000000000:0000","value":{"q":"out","p":0,"n":1,"d":"eHl6eHl6"},"ttlSeconds":180},{"op":"getMany","ns":"queen-kafka","keys":["qk:txn:a"]}]}`,
	`{"operations":[]}`, ` { "operations" : [ { "op" : "put" , "ns":"a","key":"k","value": { "a" : [1, 2] },"forever":true} ] } `,
	`{"operations":[{"op":"put","key":"k","key":"k2","value":"x y","ns":"a","forever":true}]}`, // a repeated key
	`{"operations":[{"o\u0070":"put","ns":"a","key":"k","value":1,"forever":true}]}`,           // an escaped key
	`{"operations":[{"op":"put","ns":"a","k` + "\xff" + `y":"k","value":1,"forever":true}]}`,   // invalid UTF-8 in a key
	`{"operations":[null,1,"x",[],{}]}`, `{"operations":null}`, `{"Operations":[{"op":"getMany","ns":"a","keys":[]}]}`,
	`{"operations":[{"op":"getMany","ns":"a","keys":["k"]}],"extra":1}`, `[{"op":"getMany","ns":"a","keys":["k"]}]`,
	`{"operations":[{"op":"put","ns":"a","key":"k","value":` + strings.Repeat("[", 80) + strings.Repeat("]", 80) + `,"forever":true}]}`,
	// refused
	`{"operations":[{"op":"put",}]}`, `{"operations":[{"op" "put"}]}`, `{"operations":[{"op":"put"}]`, `{"operations":[{"op":"put"}]}}`,
	`{"operations":[{"op":"put"},]}`, `{"operations":[{"op":"put"} {"op":"x"}]}`, `{"operations":[{"op":"put","value":tru}]}`, ``, `{`,
}

// checkKVSplit: what the one-pass split takes, encoding/json decodes to
// the same ops and members; a value it would leave compacted, json.Compact
// leaves as it is.
func checkKVSplit(t *testing.T, body []byte) {
	t.Helper()
	ops, ok := splitKVBody(body)
	if !ok {
		return
	}
	want, kerr := decodeKVBodyStd(body)
	if kerr != nil {
		t.Fatalf("split what encoding/json refuses (%s): %q", kerr.detail, body)
	}
	if !reflect.DeepEqual(strs(ops), strs(want)) {
		t.Fatalf("split %q\n got %q\nwant %q", body, strs(ops), strs(want))
	}
	for _, raw := range ops {
		m, ok := splitMembers(raw)
		var std map[string]json.RawMessage
		stdErr := json.Unmarshal(raw, &std)
		if !ok {
			continue
		}
		if stdErr != nil || std == nil {
			t.Fatalf("members of what encoding/json refuses: %q", raw)
		}
		if !reflect.DeepEqual(m, std) {
			t.Fatalf("members of %q\n got %q\nwant %q", raw, m, std)
		}
		for _, v := range m {
			got, err := compactValue(v)
			var buf bytes.Buffer
			if json.Compact(&buf, v) != nil || err != nil || !bytes.Equal(got, buf.Bytes()) {
				t.Fatalf("compact %q: got %q (%v), want %q", v, got, err, buf.Bytes())
			}
		}
	}
}

func strs(xs []json.RawMessage) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return out
}

func TestKVSplitMatchesEncodingJSON(t *testing.T) {
	taken := 0
	for _, b := range kvSplitBodies {
		if _, ok := splitKVBody([]byte(b)); ok {
			taken++
		}
		checkKVSplit(t, []byte(b))
	}
	if taken < 5 {
		t.Fatalf("the split took %d samples: the facade's own form must be taken", taken)
	}
}

// Every proper prefix of a body is refused, the split's path or not.
func TestKVSplitRefusesEveryTruncation(t *testing.T) {
	body := kvSplitBodies[0]
	for n := 0; n < len(body); n++ {
		if _, err := decodeKVBody([]byte(body[:n])); err == nil {
			t.Fatalf("accepted %q", body[:n])
		}
	}
}

func FuzzKVSplit(f *testing.F) {
	for _, b := range kvSplitBodies {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkKVSplit(t, body)
		if _, ok := splitKVBody(body); !ok {
			// The split refused it: the op's members on their own.
			checkKVSplit(t, append(append([]byte(`{"operations":[`), body...), "]}"...))
		}
	})
}
