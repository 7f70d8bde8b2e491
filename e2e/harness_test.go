package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
)

// Binaries built once by TestMain, and why a build failed: a test that
// needs a binary that did not build fails with the compiler's output, and
// the others still run.
var (
	binDir       string
	queenDevBin  string
	queenKafkBin string
	buildErr     = map[string]error{}
)

// requireBin fails t if bin did not build.
func requireBin(t testing.TB, bin string) {
	t.Helper()
	if err := buildErr[bin]; err != nil {
		t.Fatalf("%v", err)
	}
}

func TestMain(m *testing.M) {
	code := func() int {
		dir, err := os.MkdirTemp("", "qk-e2e-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e: temp dir:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		binDir = dir
		queenDevBin = filepath.Join(dir, "queen-dev")
		queenKafkBin = filepath.Join(dir, "queen-kafka")
		if err := buildBinaries(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
		}
		defer stopShared()
		return m.Run()
	}()
	os.Exit(code)
}

// buildBinaries compiles both commands from the module root, in parallel
// (they share the build cache). A failure is recorded for requireBin, which
// fails every test that needs that binary: never a skip, because an e2e
// test that cannot build its subject has proven nothing.
func buildBinaries() error {
	root, err := moduleRoot()
	if err != nil {
		buildErr[queenDevBin], buildErr[queenKafkBin] = err, err
		return err
	}
	var (
		wg      sync.WaitGroup
		buildMu sync.Mutex
	)
	errs := make([]error, 2)
	for i, b := range []struct{ out, pkg string }{
		{queenDevBin, "./cmd/queen-dev"},
		{queenKafkBin, "./cmd/queen-kafka"},
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = testsupport.GoBuild(root, b.out, b.pkg)
			buildMu.Lock()
			buildErr[b.out] = errs[i]
			buildMu.Unlock()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// moduleRoot is where the binaries are built from: the product module
// (the repository's root, which go.work joins to this test module, or
// e2e/go.mod's replace when GOWORK=off), or E2E_SRC when set (a clean export
// of a commit, for running the suite against committed code while the
// working tree is mid-edit).
func moduleRoot() (string, error) {
	if src := os.Getenv("E2E_SRC"); src != "" {
		return src, nil
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/queen-mq/queen-kafka").Output()
	if err != nil {
		return "", fmt.Errorf("go list -m github.com/queen-mq/queen-kafka: %w", err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", errors.New("e2e must run inside the queen-kafka test module, next to the product module")
	}
	return dir, nil
}

// freePort asks the kernel for an unused loopback port. The listener is
// closed before the port is handed to a child, which leaves a small window
// for a collision; the readiness check's test that the child itself is alive
// makes such a collision a clear failure rather than a test talking to a
// stranger.
func freePort(t testing.TB) int {
	t.Helper()
	return testsupport.FreePort(t)
}

// proc is one child process, a queen-dev or a facade: testsupport.Proc under
// the names the e2e files call its methods by.
type proc struct{ *testsupport.Proc }

// start launches the process and returns once it exited or its address
// accepts.
func (p *proc) start() error   { return p.Start() }
func (p *proc) running() bool  { return p.Running() }
func (p *proc) restart() error { return p.Restart() }
func (p *proc) kill()          { p.Kill() }
func (p *proc) exited() int    { return p.ExitCode() }
func (p *proc) pid() int       { return p.Pid() }

// signal sends sig and waits up to limit for the exit; false on timeout.
func (p *proc) signal(sig syscall.Signal, limit time.Duration) bool { return p.Signal(sig, limit) }

// terminate sends SIGTERM, fails t unless the process exits within limit,
// and returns its exit code.
func (p *proc) terminate(t testing.TB, limit time.Duration) int {
	t.Helper()
	return p.Terminate(t, limit)
}

// attachLogs dumps what p wrote during t into t's log if t failed.
func (p *proc) attachLogs(t testing.TB) { p.AttachLogs(t) }

// ---- queen-dev ----

// queenDev is one running development broker.
type queenDev struct {
	*proc
	url  string
	data string
	// admin is the bearer the test's own calls carry (fault rules, pushes,
	// fetches) when the broker runs with auth on: a token of
	// devOptions.tokens with the admin role.
	admin string
}

// devOptions shape a queen-dev start.
type devOptions struct {
	faults bool
	tokens string // QUEEN_DEV_TOKENS, empty for the single default tenant
	data   string // the data directory, "" for a fresh t.TempDir()
	fsync  string // QUEEN_DEV_FSYNC, "" for its default
	pprof  string // QUEEN_DEV_PPROF_ADDR, "" for none
}

// startQueenDev starts a broker on a free port and a fresh data directory,
// killed when t ends.
func startQueenDev(t testing.TB, o devOptions) *queenDev {
	t.Helper()
	requireBin(t, queenDevBin)
	data := o.data
	if data == "" {
		data = t.TempDir()
	}
	d := newQueenDev(data, freePort(t), o)
	t.Cleanup(d.kill)
	if err := d.start(); err != nil {
		t.Fatalf("%v\n%s", err, d.Out.From(0))
	}
	d.attachLogs(t)
	return d
}

func newQueenDev(data string, port int, o devOptions) *queenDev {
	addr := "127.0.0.1:" + strconv.Itoa(port)
	extra := map[string]string{}
	if o.faults {
		extra["QUEEN_DEV_FAULTS"] = "true"
	}
	if o.tokens != "" {
		extra["QUEEN_DEV_TOKENS"] = o.tokens
	}
	if o.fsync != "" {
		extra["QUEEN_DEV_FSYNC"] = o.fsync
	}
	if o.pprof != "" {
		extra["QUEEN_DEV_PPROF_ADDR"] = o.pprof
	}
	return &queenDev{
		proc: &proc{testsupport.QueenDev(queenDevBin, addr, data, extra)},
		url:  "http://" + addr,
		data: data,
	}
}

// ---- facade ----

// facade is one running queen-kafka.
type facade struct {
	*proc
	addr string // listen = advertised, 127.0.0.1:<port>
}

// testWidth is a test facade's QUEEN_KAFKA_DEFAULT_PARTITIONS: small, so
// metadata stays small, and not the documented 1,024, so a test can tell
// the setting was applied.
const testWidth = 8

// facadeEnv is the environment of a test facade: the documented required
// variables, a join delay of 0 so groups form at once, a small default width
// so metadata stays small, then the test's overrides (a value of "" removes
// the variable, which is how a test asks for a documented default).
func facadeEnv(queenURL, addr string, overrides map[string]string) map[string]string {
	env := map[string]string{
		"QUEEN_URL":                       queenURL,
		"QUEEN_KAFKA_ADDR":                addr,
		"QUEEN_KAFKA_ADVERTISED_ADDR":     addr,
		"QUEEN_KAFKA_GROUP_JOIN_DELAY_MS": "0",
		"QUEEN_KAFKA_DEFAULT_PARTITIONS":  strconv.Itoa(testWidth),
		"LOG_LEVEL":                       "info",
	}
	for k, v := range overrides {
		if v == "" {
			delete(env, k)
		} else {
			env[k] = v
		}
	}
	return env
}

// startFacade starts a facade in front of dev, killed when t ends.
func startFacade(t testing.TB, dev *queenDev, overrides map[string]string) *facade {
	t.Helper()
	requireBin(t, queenKafkBin)
	return launchFacade(t, newFacade(dev.url, freePort(t), overrides))
}

// launchFacade starts f, killed when t ends, its logs attached to t.
func launchFacade(t testing.TB, f *facade) *facade {
	t.Helper()
	t.Cleanup(f.kill)
	if err := f.start(); err != nil {
		t.Fatalf("%s: %v\n%s", f.Bin, err, f.Out.From(0))
	}
	f.attachLogs(t)
	return f
}

func newFacade(queenURL string, port int, overrides map[string]string) *facade {
	return newFacadeOf(queenKafkBin, queenURL, port, overrides)
}

// newFacadeOf is newFacade running binary bin (a benchmark's baseline
// build of another commit).
func newFacadeOf(bin, queenURL string, port int, overrides map[string]string) *facade {
	addr := "127.0.0.1:" + strconv.Itoa(port)
	env := facadeEnv(queenURL, addr, overrides)
	listen := env["QUEEN_KAFKA_ADDR"]
	p := &testsupport.Proc{Name: "queen-kafka@" + listen, Bin: bin, Env: testsupport.EnvList(env), Out: &testsupport.LogBuffer{}}
	if listen != "" {
		// Generous: under a chaos run's load a restarted node has taken
		// 16 s to print its first line; one that never listens still fails.
		p.Ready = testsupport.WaitTCP(listen, 45*time.Second)
	}
	return &facade{proc: &proc{p}, addr: listen}
}

// bootFailure runs a facade with env (no defaults added) and expects it to
// exit non-zero within a few seconds with every one of mention in its
// output. A facade that is still running after the deadline booted on a
// configuration it should have refused.
func bootFailure(t *testing.T, env map[string]string, mention ...string) {
	t.Helper()
	out, code := runFacadeToExit(t, env, 5*time.Second, "it booted on a configuration it must refuse")
	if code == 0 {
		t.Fatalf("facade exited 0, want a non-zero exit (env %v)\n%s", env, out)
	}
	for _, m := range mention {
		if !strings.Contains(out, m) {
			t.Errorf("boot failure output does not mention %q (env %v):\n%s", m, env, out)
		}
	}
}

// runFacadeToExit runs a facade with env (no defaults added) that must exit
// on its own within limit, and returns its output and exit code; one still
// running after limit fails t with why that is wrong.
func runFacadeToExit(t *testing.T, env map[string]string, limit time.Duration, why string) (string, int) {
	t.Helper()
	requireBin(t, queenKafkBin)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, queenKafkBin)
	cmd.Env = testsupport.EnvList(env)
	testsupport.KillWithParent(cmd)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("facade still running after %s, so %s (env %v)\n%s", limit, why, env, out)
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("facade did not run: %v (env %v)\n%s", err, env, out)
	}
	return string(out), cmd.ProcessState.ExitCode()
}

// ---- the shared environment ----

// One queen-dev and one facade serve every test that needs nothing special;
// tests keep apart by unique topic and group names. The broker's fault
// injection is on, and a test that sets rules scopes them to a facade of
// its own by QUEEN_TOKEN (TestQueenFaults), so the others never meet them.
// Started on first use and stopped by TestMain.
var shared struct {
	once sync.Once
	dev  *queenDev
	fac  *facade
	err  error
}

func sharedEnv(t testing.TB) (*queenDev, *facade) {
	t.Helper()
	requireBin(t, queenDevBin)
	requireBin(t, queenKafkBin)
	shared.once.Do(func() {
		data, err := os.MkdirTemp(binDir, "shared-dev-")
		if err != nil {
			shared.err = err
			return
		}
		port := freePort(t)
		shared.dev = newQueenDev(data, port, devOptions{faults: true})
		if err := shared.dev.start(); err != nil {
			shared.err = fmt.Errorf("%w\n%s", err, shared.dev.Out.From(0))
			return
		}
		shared.fac = newFacade(shared.dev.url, freePort(t), nil)
		if err := shared.fac.start(); err != nil {
			shared.err = fmt.Errorf("%w\n%s", err, shared.fac.Out.From(0))
		}
	})
	if shared.err != nil {
		t.Fatalf("shared environment: %v", shared.err)
	}
	if !shared.fac.running() || !shared.dev.running() {
		t.Fatalf("shared environment died earlier in the run:\n%s\n%s", testsupport.Tail(shared.dev.Out.From(0), 8<<10), testsupport.Tail(shared.fac.Out.From(0), 16<<10))
	}
	shared.dev.attachLogs(t)
	shared.fac.attachLogs(t)
	return shared.dev, shared.fac
}

func stopShared() {
	if shared.fac != nil {
		shared.fac.kill()
	}
	if shared.dev != nil {
		shared.dev.kill()
	}
}

// ---- names ----

var nameSeq atomic.Int64

// uniq makes a topic or group name unique within the run and across runs
// against one queen-dev data directory.
func uniq(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%1e9, nameSeq.Add(1))
}

// eventually polls cond every step until it holds or limit passes.
func eventually(t testing.TB, limit time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(limit)
	var last string
	for {
		ok, msg := cond()
		if ok {
			return
		}
		last = msg
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %s", what, limit, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ctxT is a context bounded by limit and by the test.
func ctxT(t testing.TB, limit time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	t.Cleanup(cancel)
	return ctx
}
