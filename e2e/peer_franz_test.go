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

// franz-go's own integration tests (its pkg/kgo tests, from the module
// cache at the version e2e requires) run against the facade: all of them
// (peer_franzall_test.go), among them the KIP-848 ones
// (peer_franz848_test.go) and the KIP-932 share-group ones
// (peer_franzshare_test.go). franz-go decides from ApiVersions whether the
// broker supports a feature and skips the feature's tests otherwise, so a
// run in which a test skips fails unless the run names it known: a skip
// proved nothing.

// kgoRun is one selection of franz-go's pkg/kgo tests and what it must
// show to pass.
type kgoRun struct {
	// pattern is -test.run; want is every test that must PASS. Any SKIP or
	// FAIL of a test in the run that known does not name fails too.
	pattern string
	want    []string
	// records is KGO_TEST_RECORDS (franz-go's default is 500,000).
	records int
	// check, when set, reads the whole -v output and returns what is wrong
	// with a run in which every test passed ("" when nothing is).
	check func(t *testing.T, out string) string
	// known names the tests that may FAIL or SKIP, each with its reason; a
	// known one that passes is logged.
	known map[string]string
	// timeout is -test.timeout (5 minutes when zero).
	timeout time.Duration
}

// franzKgo is the compiled pkg/kgo test binary, built once per run.
var franzKgo struct {
	once   sync.Once
	bin    string
	pkgDir string // the copy's pkg/kgo
	err    error
}

// franzKgoBinary copies franz-go's module out of the (read-only) module
// cache, pins its requirements to the versions this module selects (so
// the build needs no module e2e's own `go mod download` did not fetch, and
// runs offline), and compiles pkg/kgo's tests (-trimpath: the copy's
// directory is new each run, and would otherwise miss the build cache).
func franzKgoBinary(t *testing.T) string {
	t.Helper()
	franzKgo.once.Do(func() { franzKgo.bin, franzKgo.err = buildFranzKgo() })
	if franzKgo.err != nil {
		t.Fatalf("franz-go's pkg/kgo tests did not build: %v", franzKgo.err)
	}
	return franzKgo.bin
}

func buildFranzKgo() (string, error) {
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
	franzKgo.pkgDir = filepath.Join(dir, "pkg", "kgo")
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

// kgoResult is one test's verdict line in `go test -v` output.
var kgoResult = regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): (\S+) \(`)

// runFranzKgo runs r's tests against seeds and fails t unless every
// wanted test passed, nothing in the run failed or skipped but what
// r.known names, and r.check found nothing wrong.
func runFranzKgo(t *testing.T, bin string, seeds []string, rf int, r kgoRun) {
	t.Helper()
	logs := filepath.Join(t.TempDir(), "kgo.log")
	errf, err := os.Create(logs)
	if err != nil {
		t.Fatal(err)
	}
	defer errf.Close()
	timeout := r.timeout
	if timeout == 0 {
		timeout = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-test.run", r.pattern, "-test.v", "-test.count=1", "-test.timeout="+timeout.String())
	// The test binary runs in its package's directory, as go test runs it.
	cmd.Dir = franzKgo.pkgDir
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KGO_") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env,
		"KGO_SEEDS="+strings.Join(seeds, ","),
		fmt.Sprintf("KGO_TEST_RF=%d", rf),
		fmt.Sprintf("KGO_TEST_RECORDS=%d", r.records),
	)
	cmd.Stderr = errf // franz-go's client logs
	testsupport.KillWithParent(cmd)
	start := time.Now()
	out, runErr := cmd.Output()
	t.Logf("franz-go pkg/kgo -run %q against %v: %s, exit %v", r.pattern, seeds, time.Since(start).Round(time.Second), runErr)

	results := map[string]string{}
	var verdicts []string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := kgoResult.FindStringSubmatch(line); m != nil {
			results[m[2]] = m[1]
			verdicts = append(verdicts, strings.TrimSpace(line))
		}
	}
	t.Logf("verdicts: %s", strings.Join(verdicts, "; "))
	counts := map[string]int{}
	for _, v := range results {
		counts[v]++
	}
	t.Logf("tests and subtests: %d PASS, %d FAIL, %d SKIP", counts["PASS"], counts["FAIL"], counts["SKIP"])
	// A known failure makes the binary exit non-zero, and then the verdicts
	// judge; a panic or timeout ends the run without one for the test it
	// stopped, and fails it.
	failed := runErr != nil && (counts["FAIL"] == 0 || strings.Contains(string(out), "panic: "))
	for _, name := range r.want {
		if results[name] != "PASS" {
			failed = true
			t.Errorf("%s: %q, want PASS", name, results[name])
		}
	}
	for name, v := range results {
		why, isKnown := r.known[name]
		switch {
		case v != "PASS" && isKnown:
			t.Logf("%s: %s, known: %s", name, v, why)
		case v != "PASS":
			failed = true
			t.Errorf("%s: %s (nothing in the run may fail or skip but the known ones)", name, v)
		case isKnown:
			t.Logf("%s: a known failure passed (%s)", name, why)
		}
	}
	if r.check != nil {
		if why := r.check(t, string(out)); why != "" {
			failed = true
			t.Errorf("%s", why)
		}
	}
	if failed {
		t.Errorf("exit: %v\ngo test -v output (tail):\n%s", runErr, testsupport.Tail(string(out), 24<<10))
		if b, err := os.ReadFile(logs); err == nil {
			t.Logf("franz-go client logs (tail):\n%s", testsupport.Tail(string(b), 24<<10))
		}
	}
}
