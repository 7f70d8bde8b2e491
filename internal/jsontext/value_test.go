package jsontext

import (
	"encoding/json"
	"testing"
)

// SkipValue takes a value exactly when encoding/json finds it valid (up to
// white space after it), and ends where it ends.
func TestSkipValueMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{
		`1`, `-0.5e+3`, `01`, `1.`, `-`, `1e`, `"a\"b"`, "\"\xff\"", "\"a\x01\"", `true`, `tru`, `null`, `nul`,
		`{}`, `[]`, `{"a":[1,{"b":null}],"c":"d"}`, `{"a" : 1 , "b" : [ 1 , 2 ] }`, `{"a":1,}`, `[1,]`, `[1 2]`,
		`{1:2}`, `{"a"}`, `[`, `{"a":`, `[[[[]]]]`, `{"k":null,"t":1787824800123,"v":"eA=="}`,
	} {
		checkSkipValue(t, []byte(s))
	}
}

func FuzzSkipValue(f *testing.F) {
	f.Add([]byte(`{"h":[{"k":"a","v":null}],"k":"eA==","t":1,"v":"eHh4"}`))
	f.Add([]byte(`[["qk:7:0:1",{"v":"eA=="}],["",-1.5e3]]`))
	f.Fuzz(checkSkipValue)
}

func checkSkipValue(t *testing.T, b []byte) {
	end, ok := SkipValue(b, 0, 1000)
	valid := json.Valid(b)
	if ok {
		rest := SkipSpace(b, end)
		if valid != (rest == len(b)) {
			t.Fatalf("%q: SkipValue ended at %d (rest at %d), json.Valid %v", b, end, rest, valid)
		}
		if !json.Valid(b[:end]) {
			t.Fatalf("%q: SkipValue took %q, which encoding/json refuses", b, b[:end])
		}
	} else if valid && len(b) > 0 && b[0] > ' ' {
		t.Fatalf("%q: SkipValue refused what encoding/json takes", b)
	}
}
