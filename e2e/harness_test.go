package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
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
			cmd := exec.Command("go", "build", "-o", b.out, b.pkg)
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("go build %s: %w\n%s", b.pkg, err, out)
			}
			buildMu.Lock()
			buildErr[b.out] = errs[i]
			buildMu.Unlock()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// moduleRoot is where the binaries are built from: the module this test
// belongs to, or E2E_SRC when set (a clean export of a commit, for running
// the suite against committed code while the working tree is mid-edit).
func moduleRoot() (string, error) {
	if src := os.Getenv("E2E_SRC"); src != "" {
		return src, nil
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("e2e must run inside the queen-kafka module")
	}
	return filepath.Dir(mod), nil
}

// freePort asks the kernel for an unused loopback port. The listener is
// closed before the port is handed to a child, which leaves a small window
// for a collision; waitPort's check that the child itself is alive makes
// such a collision a clear failure rather than a test talking to a stranger.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// logBuffer collects a child's stdout and stderr; safe for the two copier
// goroutines exec starts and for readers.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}

// From returns everything written since byte offset off.
func (b *logBuffer) From(off int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if off > b.buf.Len() {
		off = 0
	}
	return string(b.buf.Bytes()[off:])
}

// proc is one child process: a queen-dev or a facade.
type proc struct {
	name string
	bin  string
	env  []string
	addr string // the TCP address it serves, waited on at start

	out *logBuffer

	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{}
	exitErr  error
	exitCode int
}

// baseEnv is what every child inherits: enough to run, and no QUEEN_* or
// LOG_* variable from the developer's shell that could change the subject.
func baseEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

func envList(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	env := baseEnv()
	for _, k := range keys {
		env = append(env, k+"="+m[k])
	}
	return env
}

// start launches the process and returns once it exited or addr accepts.
func (p *proc) start() error {
	p.mu.Lock()
	cmd := exec.Command(p.bin)
	cmd.Env = p.env
	cmd.Stdout = p.out
	cmd.Stderr = p.out
	// Pdeathsig: if the test binary itself dies (timeout panic, SIGKILL), the
	// children die with it instead of holding ports on a shared machine.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	fmt.Fprintf(p.out, "=== e2e: starting %s (%s)\n", p.name, time.Now().Format(time.RFC3339Nano))
	if err := cmd.Start(); err != nil {
		p.mu.Unlock()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	done := make(chan struct{})
	p.cmd, p.done = cmd, done
	p.mu.Unlock()
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.exitErr = err
		p.exitCode = cmd.ProcessState.ExitCode()
		p.mu.Unlock()
		fmt.Fprintf(p.out, "=== e2e: %s exited: %v\n", p.name, err)
		close(done)
	}()
	if p.addr == "" {
		return nil
	}
	return p.waitPort(15 * time.Second)
}

func (p *proc) waitPort(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before %s accepted: %v", p.name, p.addr, p.exitErr)
		default:
		}
		c, err := net.DialTimeout("tcp", p.addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %s not accepting after %s: %v", p.name, p.addr, limit, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *proc) running() bool {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// signal sends sig and waits up to limit for the exit; false on timeout.
func (p *proc) signal(sig syscall.Signal, limit time.Duration) bool {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return true
	}
	select {
	case <-done:
		return true
	default:
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
		return true
	case <-time.After(limit):
		return false
	}
}

// terminate sends SIGTERM, fails t unless the process exits within limit,
// and returns its exit code.
func (p *proc) terminate(t testing.TB, limit time.Duration) int {
	t.Helper()
	if !p.signal(syscall.SIGTERM, limit) {
		t.Fatalf("%s still running %s after SIGTERM", p.name, limit)
	}
	return p.exited()
}

// exited is the exit code of a process that has ended.
func (p *proc) exited() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitCode
}

// kill is kill -9.
func (p *proc) kill() { p.signal(syscall.SIGKILL, 5*time.Second) }

// restart stops nothing: the caller stops or kills first, then restarts on
// the same environment (same port, same data directory).
func (p *proc) restart() error {
	if p.running() {
		return fmt.Errorf("%s: restart while running", p.name)
	}
	return p.start()
}

// attachLogs dumps what p wrote during t into t's log if t failed.
func (p *proc) attachLogs(t testing.TB) {
	off := p.out.Len()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("---- %s output during %s ----\n%s", p.name, t.Name(), tail(p.out.From(off), 64<<10))
		}
	})
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// ---- queen-dev ----

// queenDev is one running development broker.
type queenDev struct {
	*proc
	url  string
	data string
}

// devOptions shape a queen-dev start.
type devOptions struct {
	faults bool
	tokens string // QUEEN_DEV_TOKENS, empty for the single default tenant
}

// startQueenDev starts a broker on a free port and a fresh data directory,
// killed when t ends.
func startQueenDev(t testing.TB, o devOptions) *queenDev {
	t.Helper()
	requireBin(t, queenDevBin)
	d := newQueenDev(t.TempDir(), freePort(t), o)
	t.Cleanup(d.kill)
	if err := d.start(); err != nil {
		t.Fatalf("%v\n%s", err, d.out.From(0))
	}
	d.attachLogs(t)
	return d
}

func newQueenDev(data string, port int, o devOptions) *queenDev {
	addr := "127.0.0.1:" + strconv.Itoa(port)
	env := map[string]string{
		"QUEEN_DEV_ADDR": addr,
		"QUEEN_DEV_DATA": data,
	}
	if o.faults {
		env["QUEEN_DEV_FAULTS"] = "true"
	}
	if o.tokens != "" {
		env["QUEEN_DEV_TOKENS"] = o.tokens
	}
	return &queenDev{
		proc: &proc{name: "queen-dev@" + addr, bin: queenDevBin, env: envList(env), addr: addr, out: &logBuffer{}},
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
	f := newFacade(dev.url, freePort(t), overrides)
	t.Cleanup(f.kill)
	if err := f.start(); err != nil {
		t.Fatalf("%v\n%s", err, f.out.From(0))
	}
	f.attachLogs(t)
	return f
}

func newFacade(queenURL string, port int, overrides map[string]string) *facade {
	addr := "127.0.0.1:" + strconv.Itoa(port)
	env := facadeEnv(queenURL, addr, overrides)
	listen := env["QUEEN_KAFKA_ADDR"]
	return &facade{
		proc: &proc{name: "queen-kafka@" + listen, bin: queenKafkBin, env: envList(env), addr: listen, out: &logBuffer{}},
		addr: listen,
	}
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
	cmd.Env = envList(env)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
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
			shared.err = fmt.Errorf("%w\n%s", err, shared.dev.out.From(0))
			return
		}
		shared.fac = newFacade(shared.dev.url, freePort(t), nil)
		if err := shared.fac.start(); err != nil {
			shared.err = fmt.Errorf("%w\n%s", err, shared.fac.out.From(0))
		}
	})
	if shared.err != nil {
		t.Fatalf("shared environment: %v", shared.err)
	}
	if !shared.fac.running() || !shared.dev.running() {
		t.Fatalf("shared environment died earlier in the run:\n%s\n%s", tail(shared.dev.out.From(0), 8<<10), tail(shared.fac.out.From(0), 16<<10))
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
