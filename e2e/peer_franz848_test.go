package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
)

// franz-go's own KIP-848 integration tests (its pkg/kgo tests, from the
// module cache at the version e2e requires) run against one facade and a
// 3-node cluster. They decide allow848 from ApiVersions (key 68 at v1 or
// later) and skip otherwise, so a run where any of them skips fails here:
// a skip proved nothing.
//
// The tests that skip on a broker without KIP-848, and which of them run:
//   - TestGroupETL/range/848, TestGroupETL/sticky/848,
//     TestGroupETL/sticky/848/static and TestGroupSimple/848: run.
//   - TestTxnEtl/*/848: not run. TestTxnEtl fails on this facade whatever
//     the protocol: its producer checks that transactional produce answers
//     an offset, and the facade answers base_offset -1 until EndTxn
//     allocates them (docs/transactions.md).
//   - Test848RegexBrokerResolves: not run. It needs __consumer_offsets to
//     appear as an internal topic after a FindCoordinator, and the facade
//     has no internal topics.
//
// go test's -run cannot name TestGroupETL/range/848 without also running
// TestGroupETL/range (a classic group, whose name is a prefix of the
// pattern's): it runs too and must pass like the others.
//
// TestGroupSimple/848 reads allow848 without calling franz-go's adm(),
// which sets it: in franz-go's full suite an earlier test has, and here,
// with only these tests, TestGroupSimple/848 would skip or not depending
// on whether TestGroupETL's adm() call won a race. TestPauseIssueOct2023
// (1.5 s, a sequential test, which go test runs before any parallel one
// resumes) calls adm() first; it must pass too.
const franz848Run = `^(TestPauseIssueOct2023|TestGroupETL|TestGroupSimple)$/^(range|sticky|848)$/^848$`

// franz848Want is every test the run must pass; a SKIP or FAIL of any test
// in the run fails too.
var franz848Want = []string{
	"TestPauseIssueOct2023",
	"TestGroupETL/range/848",
	"TestGroupETL/sticky/848",
	"TestGroupETL/sticky/848/static",
	"TestGroupSimple/848",
}

// franz848Records is KGO_TEST_RECORDS (franz-go's default is 500,000): a
// chain of three groups over 30,000 records still outlives the chain's
// second wave of members, which joins after 5 s, so the rebalances the
// test is about happen mid-stream.
const franz848Records = 30000

// franz848StaleCommit is what franz-go's testChainETL logs, once per chain,
// when a commit in OnPartitionsRevoked is refused STALE_MEMBER_EPOCH: it
// then skips that chain's record checks and passes. Kafka before KIP-1251
// (4.3) refuses such a commit when the member's revocation acknowledgement
// overtakes it, and so does the facade (its commits check the member epoch
// as Kafka 4.2 does), so one chain may skip; a run in which every 848 chain
// skipped its checks verified nothing and fails.
const franz848StaleCommit = "pre-KIP-1251 stale commit encountered, skipping validation"

// franz848Chains is the number of TestGroupETL's 848 chains.
const franz848Chains = 3

func TestFranzGo848(t *testing.T) {
	t.Parallel()
	bin := franz848Binary(t)
	t.Run("single", func(t *testing.T) {
		dev := startQueenDev(t, devOptions{})
		fac := startFacade(t, dev, consumerGroupEnv)
		runFranz848(t, bin, []string{fac.addr}, 1)
	})
	t.Run("cluster", func(t *testing.T) {
		c := newTestCluster(t, clusterOpts{nodes: 3, env: consumerGroupEnv})
		runFranz848(t, bin, c.addrs(), 3)
	})
}

// franz848 is the compiled pkg/kgo test binary, built once per run.
var franz848 struct {
	once   sync.Once
	bin    string
	pkgDir string // the copy's pkg/kgo
	err    error
}

// franz848Binary copies franz-go's module out of the (read-only) module
// cache, pins its requirements to the versions this module selects (so
// the build needs no module e2e's own `go mod download` did not fetch, and
// runs offline), and compiles pkg/kgo's tests (-trimpath: the copy's
// directory is new each run, and would otherwise miss the build cache).
func franz848Binary(t *testing.T) string {
	t.Helper()
	franz848.once.Do(func() { franz848.bin, franz848.err = buildFranz848() })
	if franz848.err != nil {
		t.Fatalf("franz-go's pkg/kgo tests did not build: %v", franz848.err)
	}
	return franz848.bin
}

func buildFranz848() (string, error) {
	src, err := goOut("", nil, "list", "-m", "-f", "{{.Dir}} {{.Version}}", "github.com/twmb/franz-go")
	if err != nil {
		return "", err
	}
	srcDir, version, _ := strings.Cut(src, " ")
	if srcDir == "" {
		return "", fmt.Errorf("github.com/twmb/franz-go is not in the module cache (go mod download in e2e/)")
	}
	dir := filepath.Join(binDir, "franz-go@"+version)
	if err := os.CopyFS(dir, os.DirFS(srcDir)); err != nil {
		return "", fmt.Errorf("copy %s: %w", srcDir, err)
	}
	offline := []string{"GOWORK=off", "GOFLAGS=" + strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=mod")}
	js, err := goOut(dir, offline, "mod", "edit", "-json")
	if err != nil {
		return "", err
	}
	var mod struct {
		Require []struct{ Path, Version string }
	}
	if err := json.Unmarshal([]byte(js), &mod); err != nil {
		return "", fmt.Errorf("go mod edit -json: %w", err)
	}
	for _, r := range mod.Require {
		ours, err := goOut("", nil, "list", "-m", "-f", "{{.Version}}", r.Path)
		if err != nil {
			return "", err
		}
		if ours != r.Version {
			if _, err := goOut(dir, offline, "mod", "edit", "-require="+r.Path+"@"+ours); err != nil {
				return "", err
			}
		}
	}
	// e2e's go.sum holds the sums of every module version just pinned.
	sums, err := os.ReadFile("go.sum")
	if err != nil {
		return "", err
	}
	f, err := os.OpenFile(filepath.Join(dir, "go.sum"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return "", err
	}
	_, err = f.Write(sums)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	franz848.pkgDir = filepath.Join(dir, "pkg", "kgo")
	bin := filepath.Join(binDir, "kgo.test")
	if _, err := goOut(dir, offline, "test", "-c", "-trimpath", "-o", bin, "./pkg/kgo"); err != nil {
		return "", err
	}
	return bin, nil
}

// goOut runs the go command in dir (this package's directory when empty)
// with the environment plus env, and returns its trimmed standard output.
func goOut(dir string, env []string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	testsupport.KillWithParent(cmd)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go %s (in %q): %w\n%s", strings.Join(args, " "), dir, err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// franz848Result is one test's verdict line in `go test -v` output.
var franz848Result = regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): (\S+) \(`)

// runFranz848 runs the selected tests against seeds and fails t unless
// every wanted test passed and nothing in the run failed or skipped.
func runFranz848(t *testing.T, bin string, seeds []string, rf int) {
	t.Helper()
	logs := filepath.Join(t.TempDir(), "kgo.log")
	errf, err := os.Create(logs)
	if err != nil {
		t.Fatal(err)
	}
	defer errf.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-test.run", franz848Run, "-test.v", "-test.count=1", "-test.timeout=5m")
	// The test binary runs in its package's directory, as go test runs it.
	cmd.Dir = franz848.pkgDir
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KGO_") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env,
		"KGO_SEEDS="+strings.Join(seeds, ","),
		fmt.Sprintf("KGO_TEST_RF=%d", rf),
		fmt.Sprintf("KGO_TEST_RECORDS=%d", franz848Records),
	)
	cmd.Stderr = errf // franz-go's client logs
	testsupport.KillWithParent(cmd)
	start := time.Now()
	out, runErr := cmd.Output()
	t.Logf("franz-go pkg/kgo -run %q against %v: %s, exit %v", franz848Run, seeds, time.Since(start).Round(time.Second), runErr)

	results := map[string]string{}
	var verdicts []string
	stale := 0
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := franz848Result.FindStringSubmatch(line); m != nil {
			results[m[2]] = m[1]
			verdicts = append(verdicts, strings.TrimSpace(line))
		}
		if strings.Contains(line, franz848StaleCommit) {
			stale++
		}
	}
	t.Logf("verdicts: %s", strings.Join(verdicts, "; "))
	failed := runErr != nil
	for _, name := range franz848Want {
		if results[name] != "PASS" {
			failed = true
			t.Errorf("%s: %q, want PASS", name, results[name])
		}
	}
	for name, v := range results {
		if v != "PASS" {
			failed = true
			t.Errorf("%s: %s (nothing in the run may fail or skip)", name, v)
		}
	}
	if stale > 0 {
		t.Logf("franz-go skipped the record checks of %d of %d 848 chains (%q): a commit in OnPartitionsRevoked was refused STALE_MEMBER_EPOCH", stale, franz848Chains, franz848StaleCommit)
	}
	if stale >= franz848Chains {
		failed = true
		t.Errorf("every 848 chain skipped its record checks: the run verified nothing")
	}
	if failed {
		t.Errorf("exit: %v\ngo test -v output (tail):\n%s", runErr, testsupport.Tail(string(out), 24<<10))
		if b, err := os.ReadFile(logs); err == nil {
			t.Logf("franz-go client logs (tail):\n%s", testsupport.Tail(string(b), 24<<10))
		}
	}
}
