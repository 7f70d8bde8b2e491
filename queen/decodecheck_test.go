package queen

import (
	"encoding/json"
	"reflect"
	"testing"
)

// The one-pass response decoders (decodeFetchResponse, decodePushResponse)
// are held to encoding/json: norm makes nil and empty slices compare equal
// where the two may differ only in that.

// checkDecoderSamples: every valid sample decodes exactly as encoding/json
// decodes it, and every invalid one, refused by encoding/json, is refused.
func checkDecoderSamples[T any](t *testing.T, valid, invalid []string, decode func([]byte) (T, error), norm func(T) T) {
	t.Helper()
	for _, in := range valid {
		var want T
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatalf("sample refused by encoding/json: %s: %v", in, err)
		}
		got, err := decode([]byte(in))
		if err != nil || !reflect.DeepEqual(norm(got), norm(want)) {
			t.Fatalf("%s\n got %+v (%v)\nwant %+v", in, got, err, want)
		}
	}
	for _, in := range invalid {
		var std T
		if json.Unmarshal([]byte(in), &std) == nil {
			t.Fatalf("encoding/json accepts %q: not an invalid sample", in)
		}
		if _, err := decode([]byte(in)); err == nil {
			t.Fatalf("accepted %q", in)
		}
	}
}

// fuzzDecoder: the decoder never accepts what encoding/json refuses, and
// whatever it accepts decodes exactly as encoding/json does.
func fuzzDecoder[T any](f *testing.F, valid, invalid []string, decode func([]byte) (T, error), norm func(T) T) {
	for _, s := range append(append([]string{}, valid...), invalid...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var want T
		stdErr := json.Unmarshal(in, &want)
		got, err := decode(in)
		if stdErr != nil {
			if err == nil {
				t.Fatalf("accepted what encoding/json refuses (%v): %q", stdErr, in)
			}
			return
		}
		if err != nil {
			t.Fatalf("refused what encoding/json accepts: %v: %q", err, in)
		}
		if !reflect.DeepEqual(norm(got), norm(want)) {
			t.Fatalf("differs from encoding/json on %q\n got %+v\nwant %+v", in, got, want)
		}
	})
}
