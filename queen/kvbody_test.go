package queen

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// kvBodyStd is the body as encoding/json (no HTML escaping) renders it:
// the reference appendJSONErr is held to.
func kvBodyStd(r KVRequest) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// sameJSON decodes both (numbers kept exact) and compares.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	dec := func(x []byte) any {
		d := json.NewDecoder(bytes.NewReader(x))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatalf("not JSON: %v: %s", err, x)
		}
		return v
	}
	return reflect.DeepEqual(dec(a), dec(b))
}

// checkKVBody: the body says what encoding/json's says, byte for byte when
// no string needs an escape the two spell differently, and a value one
// refuses the other refuses.
func checkKVBody(t *testing.T, r KVRequest) {
	t.Helper()
	want, stdErr := kvBodyStd(r)
	got, err := r.appendJSONErr(nil)
	switch {
	case stdErr != nil && err == nil:
		t.Fatalf("accepted what encoding/json refuses (%v): %+v", stdErr, r)
	case stdErr == nil && err != nil:
		t.Fatalf("refused what encoding/json accepts: %v: %+v", err, r)
	case err != nil:
		return
	}
	if !sameJSON(t, got, want) {
		t.Fatalf("differs from encoding/json\n got %s\nwant %s", got, want)
	}
}

var kvBodyValues = []string{
	`1`, `-0.5e+3`, `"eHl6"`, `null`, `true`, `{"a":[1,{"b":null}],"c":"d"}`, `[]`, `{}`,
	` {"a" : 1 } `, "[1,\n2]", `"a b"`, `"\u00e9\n\"q\""`, `"<&>"`, strings.Repeat("[", 70) + strings.Repeat("]", 70),
	// refused
	`{`, `[1,]`, `"x`, `01`, `1 2`, `tru`, `{"a" 1}`, `"` + "\x01" + `"`, `nul`,
}

var kvBodyStrings = []string{"", "qk:txn:a", "k\"q\\", "tab\tnew\nline", "<&>", "é", "\u2028", "\x7f", "ctl\x01"}

func randomKVOp(r *rand.Rand) KVOp {
	pick := func(xs []string) string { return xs[r.IntN(len(xs))] }
	op := KVOp{Op: pick([]string{OpPut, OpGetMany, OpGetPrefix, OpDelete, "incr"}), NS: pick([]string{Namespace, "n s"}), Key: pick(kvBodyStrings)}
	if r.IntN(2) == 0 {
		op.Value = json.RawMessage(pick(kvBodyValues))
	}
	if r.IntN(3) == 0 {
		op.TTLSeconds = r.Int64N(1<<40) - 5
	}
	op.Forever = r.IntN(2) == 0
	if r.IntN(2) == 0 {
		e := r.Int64() - r.Int64()
		op.Expect = &e
	}
	op.Required = r.IntN(2) == 0
	for range r.IntN(3) {
		op.Keys = append(op.Keys, pick(kvBodyStrings))
	}
	if r.IntN(3) == 0 {
		op.Keys = []string{}
	}
	op.Prefix, op.After = pick(kvBodyStrings), pick(kvBodyStrings)
	op.Limit = r.IntN(3) * 500
	op.KeysOnly = r.IntN(2) == 0
	if r.IntN(8) == 0 {
		d := r.Float64() * 1e22
		op.Delta = &d
	}
	return op
}

func TestKVBodyMatchesEncodingJSON(t *testing.T) {
	checkKVBody(t, KVRequest{})
	checkKVBody(t, KVRequest{Operations: []KVOp{}})
	r := rand.New(rand.NewPCG(23, 4))
	for range 5000 {
		req := KVRequest{}
		for range r.IntN(4) {
			req.Operations = append(req.Operations, randomKVOp(r))
		}
		checkKVBody(t, req)
	}
}

// A value without whitespace is sent as the very bytes given (the staging
// write's base64), and the body is rendered into one buffer.
func TestKVBodyValueAsGiven(t *testing.T) {
	v := json.RawMessage(`{"q":"out","p":0,"n":1,"d":"` + strings.Repeat("eHl6", 15000) + `"}`)
	req := KVRequest{Operations: []KVOp{{Op: OpPut, NS: Namespace, Key: "k", Value: v, TTLSeconds: 60}}}
	got, err := req.appendJSONErr(nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := kvBodyStd(req)
	if !bytes.Equal(got, want) {
		t.Fatalf("got %.200s…\nwant %.200s…", got, want)
	}
	if allocs := testing.AllocsPerRun(20, func() { _, _ = req.appendJSONErr(nil) }); allocs > 1 {
		t.Fatalf("%v allocations per body, want 1", allocs)
	}
}

func FuzzKVBody(f *testing.F) {
	for _, v := range kvBodyValues {
		f.Add("qk:txn:a", []byte(v), int64(3), "p")
	}
	f.Fuzz(func(t *testing.T, key string, value []byte, expect int64, prefix string) {
		checkKVBody(t, KVRequest{Operations: []KVOp{
			{Op: OpPut, NS: Namespace, Key: key, Value: value, Expect: &expect, Forever: true},
			{Op: OpGetPrefix, NS: Namespace, Prefix: prefix, After: key, Limit: int(expect % 1000)},
			{Op: OpGetMany, NS: Namespace, Keys: []string{key, prefix}},
		}})
	})
}

// BenchmarkKVBody: a staging write's body (64 rows of 60,000 bytes of
// base64), rendered here and by encoding/json.
func BenchmarkKVBody(b *testing.B) {
	v := json.RawMessage(`{"q":"out","p":0,"n":1,"d":"` + strings.Repeat("eHl6", 15000) + `"}`)
	var req KVRequest
	for i := range 64 {
		req.Operations = append(req.Operations, KVOp{Op: OpPut, NS: Namespace, Key: "qk:txnstage:bench:7:0:1:r:out:0:0000000000:" + strings.Repeat("0", i%4), Value: v, TTLSeconds: 180})
	}
	b.Run("appender", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := req.appendJSONErr(nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := kvBodyStd(req); err != nil {
				b.Fatal(err)
			}
		}
	})
}
