package node

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// A recurring warning is logged once, then at most once per window with
// the count of what it stands for.
func TestLogEvery(t *testing.T) {
	var out bytes.Buffer
	log := slog.New(slog.NewTextHandler(&out, nil))
	l := logEvery{every: 10 * time.Second}
	t0 := time.Unix(1000, 0)
	for i := range 100 {
		l.warn(log, t0.Add(time.Duration(i)*time.Millisecond), "refused", "i", i)
	}
	l.warn(log, t0.Add(10*time.Second), "refused", "i", 100)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines for 101 warnings over 10 s, want 2:\n%s", len(lines), out.String())
	}
	if strings.Contains(lines[0], "suppressed") || !strings.Contains(lines[1], "suppressed=99") {
		t.Errorf("want the first line bare and the second counting the 99 suppressed:\n%s", out.String())
	}
}
