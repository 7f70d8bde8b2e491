package queen

import "testing"

func TestNextCursor(t *testing.T) {
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		name  string
		r     KVResult
		after string
		next  string
		ok    bool
	}{
		{"last row", KVResult{Rows: []KVRow{{Key: "a"}, {Key: "c"}}, NextAfter: s("z")}, "", "c", true},
		{"skipped ahead", KVResult{NextAfter: s("m")}, "k", "m", true},
		{"cursor that does not move", KVResult{NextAfter: s("k")}, "k", "", false},
		{"cursor behind", KVResult{NextAfter: s("a")}, "k", "", false},
		{"nothing", KVResult{}, "k", "", false},
	} {
		next, ok := tc.r.NextCursor(tc.after)
		if next != tc.next || ok != tc.ok {
			t.Errorf("%s: NextCursor(%q) = %q, %v; want %q, %v", tc.name, tc.after, next, ok, tc.next, tc.ok)
		}
	}
}
