package e2e

import (
	"slices"
	"testing"
)

// The soak's growth check (soak_test.go, build tag soak), untagged so that
// its own test runs with the suite and not only in a soak of 30 minutes.

// judgeGrowth is the growth check, on the samples taken after the warm-up:
// "beyond noise" is the maximum of the last third above the maximum of the
// middle third by more than slack(middle max). A leak climbs through both
// thirds; a spike in the middle third only raises the bar, and one in the
// last third must outgrow the slack. Too few samples to cut in thirds
// judge nothing.
func judgeGrowth(vs []float64, slack func(mid float64) float64) (mid, last float64, grew bool) {
	if len(vs) < 3 {
		return 0, 0, false
	}
	n := len(vs) / 3
	mid = slices.Max(vs[n : 2*n])
	last = slices.Max(vs[2*n:])
	return mid, last, last > mid+slack(mid)
}

// TestSoakJudgeGrowth: the growth check passes flat and noisy series and
// a spike in the middle third, and fails a climb and a late jump.
func TestSoakJudgeGrowth(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name string
		vs   []float64
		grew bool
	}{
		{"flat", []float64{40, 40, 40, 40, 40, 40}, false},
		{"noise", []float64{40, 44, 41, 45, 42, 46}, false},
		{"middle spike", []float64{40, 40, 90, 40, 40, 40}, false},
		{"climb", []float64{40, 50, 60, 70, 80, 90}, true},
		{"late jump", []float64{40, 40, 40, 40, 40, 60}, true},
		{"too few", []float64{40, 90}, false},
	} {
		vs := make([]float64, len(c.vs))
		for i, v := range c.vs {
			vs[i] = v * mib
		}
		if _, _, grew := judgeGrowth(vs, rssSlack); grew != c.grew {
			t.Errorf("%s: grew %v, want %v", c.name, grew, c.grew)
		}
	}
	if _, _, grew := judgeGrowth([]float64{60, 60, 60, 60, 60, 87}, gorSlack); !grew {
		t.Errorf("goroutines 60 -> 87: not judged grown (allowed 86)")
	}
}

// RSS may grow by 20% or 16 MiB, whichever is more; goroutines by 10% + 20.
func rssSlack(mid float64) float64 { return max(0.2*mid, 16<<20) }
func gorSlack(mid float64) float64 { return 0.1*mid + 20 }
