package ratelog

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
)

// A recurring warning is logged once, then at most once per window with
// the count of what it stands for.
func TestEvery(t *testing.T) {
	var out testsupport.LogBuffer
	log := slog.New(slog.NewTextHandler(&out, nil))
	l := Every{Window: 10 * time.Second}
	t0 := time.Unix(1000, 0)
	for i := range 100 {
		l.Warn(log, t0.Add(time.Duration(i)*time.Millisecond), "refused", "i", i)
	}
	l.Warn(log, t0.Add(10*time.Second), "refused", "i", 100)
	lines := strings.Split(strings.TrimSpace(out.From(0)), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines for 101 warnings over 10 s, want 2:\n%s", len(lines), out.From(0))
	}
	if strings.Contains(lines[0], "suppressed") || !strings.Contains(lines[1], "suppressed=99") {
		t.Errorf("want the first line bare and the second counting the 99 suppressed:\n%s", out.From(0))
	}
}

// Occurrences counted in a window are reported when it closes, though
// nothing recurs after it.
func TestEveryReportsAtWindowEnd(t *testing.T) {
	var out testsupport.LogBuffer
	log := slog.New(slog.NewTextHandler(&out, nil))
	l := Every{Window: 50 * time.Millisecond}
	for i := range 5 {
		l.Warn(log, time.Now(), "refused", "i", i)
	}
	testsupport.WaitFor(t, 5*time.Second, "the report of the 4 suppressed warnings", func() bool {
		return strings.Contains(out.From(0), "suppressed=4")
	})
	if n := strings.Count(out.From(0), "\n"); n != 2 {
		t.Errorf("%d lines, want the first and the report:\n%s", n, out.From(0))
	}
}
