package testsupport

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Proc is one child process a test runs (a queen-dev, a facade, a test
// binary re-run as its own main): started, waited on until ready, signalled,
// killed and restarted on the same environment, with its stdout and stderr
// in Out. Set the fields, then Start.
type Proc struct {
	Name string   // in Out's markers and in errors
	Bin  string   // the executable
	Args []string // its arguments
	Env  []string // its whole environment (EnvList builds one)
	// Ready, when set, is how Start knows the process is serving (WaitTCP,
	// WaitHealth); it should fail once Done is closed.
	Ready func(*Proc) error
	Out   *LogBuffer // stdout and stderr with start and exit markers; Start makes one when nil

	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{}
	exitErr  error
	exitCode int
}

// BaseEnv is what every child inherits: enough to run, and no QUEEN_* or
// LOG_* variable from the developer's shell that could change the subject.
func BaseEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// EnvList is BaseEnv plus m, in key order.
func EnvList(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	env := BaseEnv()
	for _, k := range keys {
		env = append(env, k+"="+m[k])
	}
	return env
}

// Start launches the process and returns once Ready holds (at once without
// Ready), or with Ready's error; the process is left running either way, so
// the caller's clean-up (Kill) still applies.
func (p *Proc) Start() error {
	p.mu.Lock()
	if p.Out == nil {
		p.Out = &LogBuffer{}
	}
	cmd := exec.Command(p.Bin, p.Args...)
	cmd.Env = p.Env
	cmd.Stdout = p.Out
	cmd.Stderr = p.Out
	KillWithParent(cmd)
	fmt.Fprintf(p.Out, "=== testsupport: starting %s (%s)\n", p.Name, time.Now().Format(time.RFC3339Nano))
	if err := cmd.Start(); err != nil {
		p.mu.Unlock()
		return fmt.Errorf("start %s: %w", p.Name, err)
	}
	done := make(chan struct{})
	p.cmd, p.done = cmd, done
	p.exitErr, p.exitCode = nil, 0
	p.mu.Unlock()
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.exitErr = err
		p.exitCode = cmd.ProcessState.ExitCode()
		p.mu.Unlock()
		fmt.Fprintf(p.Out, "=== testsupport: %s exited: %v\n", p.Name, err)
		close(done)
	}()
	if p.Ready == nil {
		return nil
	}
	return p.Ready(p)
}

// Done is closed once the process of the last Start has exited (nil before
// any Start).
func (p *Proc) Done() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

// Running is whether the process of the last Start is still alive.
func (p *Proc) Running() bool {
	done := p.Done()
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

// Signal sends sig and waits up to limit for the exit; false on timeout.
// A process never started or already gone counts as exited.
func (p *Proc) Signal(sig syscall.Signal, limit time.Duration) bool {
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

// Terminate sends SIGTERM, fails t unless the process exits within limit,
// and returns its exit code.
func (p *Proc) Terminate(t testing.TB, limit time.Duration) int {
	t.Helper()
	if !p.Signal(syscall.SIGTERM, limit) {
		t.Fatalf("%s still running %s after SIGTERM", p.Name, limit)
	}
	return p.ExitCode()
}

// Kill is kill -9, waiting (up to 5 s) for the exit.
func (p *Proc) Kill() { p.Signal(syscall.SIGKILL, 5*time.Second) }

// ExitCode is the exit code of a process that has ended (-1 when a signal
// ended it).
func (p *Proc) ExitCode() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitCode
}

// ExitErr is what Wait returned for a process that has ended.
func (p *Proc) ExitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitErr
}

// Pid is the process id of the last Start, 0 before any.
func (p *Proc) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Restart stops nothing: the caller stops or kills first, then restarts on
// the same environment (same port, same data directory).
func (p *Proc) Restart() error {
	if p.Running() {
		return fmt.Errorf("%s: restart while running", p.Name)
	}
	return p.Start()
}

// AttachLogs dumps the last 64 KiB of what p writes from now on into t's
// log if t fails.
func (p *Proc) AttachLogs(t testing.TB) {
	off := p.Out.Len()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("---- %s output during %s ----\n%s", p.Name, t.Name(), Tail(p.Out.From(off), 64<<10))
		}
	})
}

// WaitTCP is a Ready that waits up to limit until addr accepts a
// connection, failing at once if the process exits first.
func WaitTCP(addr string, limit time.Duration) func(*Proc) error {
	return func(p *Proc) error {
		deadline := time.Now().Add(limit)
		for {
			select {
			case <-p.Done():
				return fmt.Errorf("%s exited before %s accepted: %v", p.Name, addr, p.ExitErr())
			default:
			}
			c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
			if err == nil {
				c.Close()
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s: %s not accepting after %s: %v", p.Name, addr, limit, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// WaitLine waits up to limit for a line of Out (from its start) that
// match accepts, and returns it; it fails at once if the process exits
// first without one.
func (p *Proc) WaitLine(match func(line string) bool, limit time.Duration) (string, error) {
	deadline := time.Now().Add(limit)
	for {
		exited := !p.Running()
		for _, l := range strings.Split(p.Out.From(0), "\n") {
			if match(l) {
				return l, nil
			}
		}
		if exited {
			return "", fmt.Errorf("%s exited without the line awaited: %v", p.Name, p.ExitErr())
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("%s: the line awaited not logged within %s", p.Name, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
