//go:build jsclients

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
)

// The @platformatic/kafka scenario (issue 10's "Why"): a Node.js client that
// speaks only modern protocol versions (CreateTopics v7, Metadata v10+,
// Fetch v12+, FindCoordinator v4+, JoinGroup v6+, Heartbeat v4, OffsetCommit
// v8) runs e2e/js/scenario.mjs, a new user's first session (admin, keyed
// idempotent produce, a group that consumes and commits, a static member
// restarted without a rebalance), against a single facade and against a
// three-node cluster. Behind the build tag
// jsclients and run by `make test-js`, never by `make test`: it needs node
// and, the first time, `npm ci` from the npm registry, which CI may not reach.

// jsDir is e2e/js, the scenario's npm package; `npm ci` installs its pinned
// lockfile there when node_modules lacks the client.
func jsDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("js")
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed (the jsclients tests need Node.js 20+ and npm): %v", tool, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@platformatic", "kafka", "package.json")); err == nil {
		return dir
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	testsupport.KillWithParent(cmd)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
	}
	return dir
}

// runScenario runs scenario.mjs against bootstrap and fails t with its
// output on a non-zero exit; on success the output goes to the log.
func runScenario(t *testing.T, dir string, bootstrap []string) {
	t.Helper()
	const limit = 150 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "scenario.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"QUEEN_KAFKA_BOOTSTRAP="+strings.Join(bootstrap, ","),
		// The scenario's own deadline comes first, so a hang says which step.
		"SCENARIO_TIMEOUT_MS="+strconv.FormatInt((limit-10*time.Second).Milliseconds(), 10),
		"SCENARIO_PREFIX="+uniq("pfk"),
	)
	testsupport.KillWithParent(cmd)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("node scenario.mjs still running after %s\n%s", limit, out)
	}
	if err != nil {
		t.Fatalf("node scenario.mjs against %v: %v\n%s", bootstrap, err, out)
	}
	t.Logf("node scenario.mjs against %v:\n%s", bootstrap, out)
}

func TestPlatformaticKafka(t *testing.T) {
	dir := jsDir(t)
	t.Run("single", func(t *testing.T) {
		dev := startQueenDev(t, devOptions{})
		f := startFacade(t, dev, nil)
		runScenario(t, dir, []string{f.addr})
	})
	t.Run("cluster", func(t *testing.T) {
		c := newTestCluster(t, clusterOpts{nodes: 3})
		runScenario(t, dir, c.addrs())
	})
}
