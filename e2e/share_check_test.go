package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestShareHistoryChecker: TestShareConsumersSIGKILL's checker, on worker
// outputs made up to break each rule (one partition of 8 records, keys =
// offsets; worker 1 is the killed one), flags what it must and passes a
// clean history.
func TestShareHistoryChecker(t *testing.T) {
	// clean is every offset but skip delivered once to worker 0 and
	// acknowledged by the rule (key 3 RELEASEd, then ACCEPTed at count 2;
	// key 7 REJECTed).
	clean := func(skip ...int64) string {
		var b strings.Builder
		for off := int64(0); off < 8; off++ {
			if slices.Contains(skip, off) {
				continue
			}
			fmt.Fprintf(&b, "D 0 %d %d 1\nC 0 %d %c\n", off, off, off, shareAck(int(off), 1))
			if off == 3 {
				b.WriteString("D 0 3 3 2\nC 0 3 A\n")
			}
		}
		return b.String()
	}
	for _, tc := range []struct {
		name    string
		outs    []string
		want    string // a fragment of the one problem expected; "" none
		doubted int
	}{
		{name: "clean", outs: []string{clean(), "", ""}},
		{name: "lost", outs: []string{clean(5), "", ""}, want: "never delivered"},
		{name: "delivered, never acknowledged", outs: []string{clean(5) + "D 0 5 5 1\n", "", ""}, want: "lost"},
		{name: "held by the killed worker", outs: []string{clean(5), "D 0 5 5 1\n", ""}, doubted: 1},
		{name: "ack cut by the kill", outs: []string{clean(5), "D 0 5 5 1\nC 0 5", ""}, doubted: 1},
		{name: "accepted twice", outs: []string{clean(), "", "D 0 5 5 2\nC 0 5 A\n"}, want: "ACCEPTed 2 times"},
		{name: "one acquisition twice", outs: []string{clean(), "", "D 0 5 5 1\n"}, want: "twice under one acquisition"},
		{name: "accepted and rejected", outs: []string{clean(), "", "D 0 7 7 2\nC 0 7 A\n"}, want: "REJECTed by"},
		{name: "ack against the rule", outs: []string{clean(), "", "D 0 7 7 2\nC 0 7 J\n"}, want: "its rule says"},
		{name: "failed ack, then redelivered", outs: []string{clean(5) + "D 0 5 5 1\nF 0 5 A\n", "", "D 0 5 5 2\nC 0 5 A\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, problems := checkShareHistory(shareHistory(tc.outs), 1, 8, 1)
			var hits []string
			for _, p := range problems {
				if tc.want != "" && strings.Contains(p, tc.want) {
					hits = append(hits, p)
				}
			}
			switch {
			case tc.want == "" && len(problems) > 0:
				t.Errorf("problems in a history without any: %q", problems)
			case tc.want != "" && len(hits) == 0:
				t.Errorf("no problem mentions %q: %q", tc.want, problems)
			}
			if st.doubt != tc.doubted {
				t.Errorf("%d records in doubt, want %d", st.doubt, tc.doubted)
			}
		})
	}
}
