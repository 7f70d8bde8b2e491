package e2e

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
)

// TestQueuesExample runs docs/queues-for-kafka.md's example program
// (e2e/examples/queues) against a facade and compares what it prints with
// what the page says it prints.
func TestQueuesExample(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "queues")
	if err := testsupport.GoBuild("", bin, "./examples/queues"); err != nil {
		t.Fatal(err)
	}
	dev := startQueenDev(t, devOptions{})
	fac := startFacade(t, dev, shareGroupEnv)
	topic, group := uniq("jobs"), uniq("workers")
	cmd := exec.CommandContext(ctxT(t, 90*time.Second), bin, "-brokers", fac.addr, "-topic", topic, "-group", group)
	testsupport.KillWithParent(cmd)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("queues: %v\n%s%s", err, out, stderr.String())
	}
	var want []string
	for i := 0; i < 10; i++ {
		switch i {
		case 3:
			want = append(want, "job-3 delivery 1: release", "job-3 delivery 2: accept")
		case 7:
			want = append(want, "job-7 delivery 1: reject")
		default:
			want = append(want, fmt.Sprintf("job-%d delivery 1: accept", i))
		}
	}
	want = append(want, fmt.Sprintf("share group %s: %s[0] start offset 10", group, topic))
	if got := strings.TrimSpace(string(out)); got != strings.Join(want, "\n") {
		t.Errorf("queues printed:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}
