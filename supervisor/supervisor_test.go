package supervisor

import (
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
)

// harness is a supervisor whose child is this test binary in one of the
// fakeChild modes, on a fake clock, logging JSON into logs.
type harness struct {
	*Supervisor
	clk  *testsupport.FakeClock
	logs *logBuf
}

func newHarness(t *testing.T, mode string, env ...string) *harness {
	t.Helper()
	environ := append([]string{
		"SUPERVISOR_TEST_CHILD=" + mode,
		"QUEEN_KAFKA_EMBEDDED=true",
		"QUEEN_KAFKA_ADVERTISED_ADDR=localhost:9092",
		"QUEEN_KAFKA_BIN=" + os.Args[0],
		"QUEEN_KAFKA_SHUTDOWN_GRACE_MS=250",
	}, env...)
	cfg, err := Load(context.Background(), environ, os.Executable)
	require.NoError(t, err)
	h := &harness{clk: newFakeClock(), logs: &logBuf{}}
	h.Supervisor = New(cfg, Options{Logger: h.logs.logger(), Clock: h.clk})
	h.Start(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 6632})
	t.Cleanup(func() {
		h.Stop()
		if t.Failed() {
			t.Logf("supervisor log:\n%s", h.logs)
		}
	})
	return h
}

// armed waits until the supervisor's backoff timer of d is set: the phase
// says backoff a moment before the timer is, and a fake clock advanced in
// between would leave the timer waiting for good.
func (h *harness) armed(t *testing.T, d time.Duration) {
	t.Helper()
	eventually(t, "the backoff timer armed", func() bool { return h.clk.WaitersFor(d) > 0 })
}

// await polls Status until cond holds and returns that Status.
func (h *harness) await(t *testing.T, what string, cond func(Status) bool) Status {
	t.Helper()
	var st Status
	eventually(t, what, func() bool { st = h.Status(); return cond(st) })
	return st
}

func (h *harness) running(t *testing.T, restarts int) Status {
	t.Helper()
	return h.await(t, "child running after "+strconv.Itoa(restarts)+" restarts", func(st Status) bool {
		return st.Phase == PhaseRunning && st.Restarts == restarts && st.PID != nil
	})
}

// TestRestartBackoff: a child killed with SIGKILL comes back after the
// backoff, which doubles from 1 s to a 30 s ceiling, restarts counts each
// one, and an hour of healthy running resets the backoff to 1 s.
func TestRestartBackoff(t *testing.T) {
	h := newHarness(t, "sleep")
	st := h.running(t, 0)
	assert.Equal(t, "embedded", st.Mode)
	assert.Nil(t, st.LastExit)
	assert.EqualValues(t, 1000, st.BackoffMs, "a crash now would wait 1 s")

	pids := map[int]bool{}
	for i, want := range []int64{1000, 2000, 4000, 8000, 16000, 30000, 30000} {
		st := h.running(t, i)
		pid := *st.PID
		assert.False(t, pids[pid], "a restart is a new process")
		pids[pid] = true
		require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
		st = h.await(t, "backoff after kill "+strconv.Itoa(i), func(st Status) bool { return st.Phase == PhaseBackoff && st.Restarts == i })
		assert.Equal(t, want, st.BackoffMs, "backoff after kill %d", i)
		assert.Nil(t, st.PID)
		require.NotNil(t, st.LastExit)
		assert.Equal(t, "signal: killed", *st.LastExit)
		assert.False(t, testsupport.Alive(pid))

		// Nothing starts before the backoff has passed.
		h.armed(t, time.Duration(want)*time.Millisecond)
		// The backoff's is the one timer due then, or the advances below
		// could fire another in its place (reap's drain bound once did).
		assert.Equal(t, 1, h.clk.WaitersFor(time.Duration(want)*time.Millisecond), "timers due with the backoff after kill %d", i)
		h.clk.Advance(time.Duration(want-1) * time.Millisecond)
		assert.Equal(t, PhaseBackoff, h.Status().Phase)
		h.clk.Advance(time.Millisecond)
	}
	st = h.running(t, 7)
	assert.EqualValues(t, 30000, st.BackoffMs)

	// An hour of healthy running: the next crash waits 1 s again.
	h.clk.Advance(time.Hour)
	st = h.Status()
	assert.EqualValues(t, time.Hour.Milliseconds(), st.UptimeMs)
	assert.EqualValues(t, 1000, st.BackoffMs)
	require.NoError(t, syscall.Kill(*st.PID, syscall.SIGKILL))
	st = h.await(t, "backoff after an hour", func(st Status) bool { return st.Phase == PhaseBackoff })
	assert.EqualValues(t, 1000, st.BackoffMs)
	h.armed(t, time.Second)
	h.clk.Advance(time.Second)
	st = h.running(t, 8)
	assert.EqualValues(t, 2000, st.BackoffMs, "and doubles from there")

	// The start line follows the running status it is logged after, so
	// the ninth may land a moment after running(t, 8) returned.
	var starts []map[string]any
	require.Eventually(t, func() bool {
		starts = h.logs.records("queen-kafka facade started (embedded)")
		return len(starts) >= 9
	}, 5*time.Second, 5*time.Millisecond)
	require.Len(t, starts, 9)
	assert.Equal(t, "http://127.0.0.1:6632", starts[0]["queen_url"])
	assert.Equal(t, FromLoopback, starts[0]["queen_url_from"])
	assert.Equal(t, os.Args[0], starts[0]["bin"])
	assert.EqualValues(t, 8, starts[8]["restarts"])
}

// TestStopTerm: a stop is SIGTERM to the child's group, and a child that
// exits on it is not restarted.
func TestStopTerm(t *testing.T) {
	h := newHarness(t, "sleep")
	pid := *h.running(t, 0).PID
	h.Stop()
	st := h.Status()
	assert.Equal(t, PhaseStopped, st.Phase)
	require.NotNil(t, st.LastExit)
	assert.Equal(t, "signal: terminated", *st.LastExit)
	assert.Nil(t, st.PID)
	assert.False(t, testsupport.Alive(pid))
	assert.Empty(t, h.logs.records("queen-kafka facade still running after the grace (embedded); SIGKILL"))
	h.clk.Advance(time.Hour)
	assert.Equal(t, PhaseStopped, h.Status().Phase, "a stopped child stays stopped")
	h.Stop() // twice is fine
}

// TestStopGraceKill: a child that ignores SIGTERM is SIGKILLed when the
// grace has passed, and not before.
func TestStopGraceKill(t *testing.T) {
	h := newHarness(t, "ignore")
	pid := *h.running(t, 0).PID
	eventually(t, "the child ignores SIGTERM", func() bool { return len(h.logs.records("queen-kafka")) > 0 })
	stopped := make(chan struct{})
	go func() { h.Stop(); close(stopped) }()
	eventually(t, "the stop waits out the grace", func() bool { return h.clk.WaitersFor(250*time.Millisecond) == 1 })
	assert.Equal(t, PhaseStopping, h.Status().Phase)
	assert.True(t, testsupport.Alive(pid), "SIGTERM is ignored, so the child lives until the grace has passed")
	select {
	case <-stopped:
		t.Fatal("Stop returned before the grace had passed")
	default:
	}
	h.clk.Advance(250 * time.Millisecond)
	<-stopped
	st := h.Status()
	require.NotNil(t, st.LastExit)
	assert.Equal(t, "signal: killed", *st.LastExit)
	assert.False(t, testsupport.Alive(pid))
	assert.Len(t, h.logs.records("queen-kafka facade still running after the grace (embedded); SIGKILL"), 1)
}

// TestStopGroup: the child is a process group of its own, so a stop takes
// a grandchild with it rather than leaving it re-parented.
func TestStopGroup(t *testing.T) {
	h := newHarness(t, "group")
	h.running(t, 0)
	var grandchild int
	eventually(t, "the grandchild's pid", func() bool {
		for _, r := range h.logs.records("queen-kafka") {
			if s, ok := strings.CutPrefix(r["line"].(string), "grandchild "); ok {
				grandchild, _ = strconv.Atoi(s)
			}
		}
		return grandchild != 0
	})
	require.True(t, testsupport.Alive(grandchild))
	pgid, err := syscall.Getpgid(grandchild)
	require.NoError(t, err)
	assert.Equal(t, *h.Status().PID, pgid, "the child leads its own group")
	own, _ := syscall.Getpgid(0)
	assert.NotEqual(t, own, pgid)
	h.Stop()
	eventually(t, "the grandchild died with the stop", func() bool { return !testsupport.Alive(grandchild) })
}

// TestChildEnvironment: the child sees the broker's environment less its
// secrets, and the injected QUEEN_URL.
func TestChildEnvironment(t *testing.T) {
	h := newHarness(t, "env", "PG_PASSWORD=pg", "JWT_SECRET=jwt", "QUEEN_ENCRYPTION_KEY=k", "QUEEN_SYNC_SECRET=s",
		"QUEEN_DEV_TOKENS=tok=tenant", "QUEEN_TOKEN=facade", "QUEEN_URL=")
	h.running(t, 0)
	var env []string
	eventually(t, "the child printed QUEEN_URL", func() bool {
		env = env[:0]
		for _, r := range h.logs.records("queen-kafka") {
			if s, ok := strings.CutPrefix(r["line"].(string), "env "); ok {
				env = append(env, s)
			}
		}
		return len(env) > 0 && strings.HasPrefix(env[len(env)-1], "QUEEN_URL=")
	})
	assert.Contains(t, env, "QUEEN_URL=http://127.0.0.1:6632")
	assert.Contains(t, env, "QUEEN_TOKEN=facade")
	for _, secret := range strippedSecrets {
		for _, kv := range env {
			assert.False(t, strings.HasPrefix(kv, secret+"="), "%s reached the child", secret)
		}
	}
}

// TestOutputBudgetProcess: a child printing 1,000 lines over stdout and
// stderr gets 200 of them into the log and one suppressed count of 800.
func TestOutputBudgetProcess(t *testing.T) {
	h := newHarness(t, "spew")
	// The child exits after its lines; its output is forwarded before the
	// supervisor enters the backoff.
	h.await(t, "the child exited", func(st Status) bool { return st.Phase == PhaseBackoff })
	lines := h.logs.records("queen-kafka")
	require.Len(t, lines, lineBudget)
	streams := map[any]int{}
	for _, l := range lines {
		streams[l["stream"]]++
	}
	assert.Positive(t, streams["stdout"])
	assert.Positive(t, streams["stderr"])
	assert.Empty(t, h.logs.records("queen-kafka output over budget"))
	h.clk.Advance(budgetWindow)
	eventually(t, "the suppressed count", func() bool { return len(h.logs.records("queen-kafka output over budget")) == 1 })
	assert.EqualValues(t, 800, h.logs.records("queen-kafka output over budget")[0]["suppressed"])
}

// TestOutputCleaned: escape sequences and control bytes are stripped and a
// long line is cut at 4 KiB, as the child really writes them.
func TestOutputCleaned(t *testing.T) {
	h := newHarness(t, "bytes")
	st := h.await(t, "the child exited", func(st Status) bool { return st.Phase == PhaseBackoff })
	require.NotNil(t, st.LastExit)
	assert.Equal(t, "exit status 3", *st.LastExit)
	var got []string
	var truncated []any
	for _, r := range h.logs.records("queen-kafka") {
		got = append(got, r["line"].(string))
		truncated = append(truncated, r["truncated"])
	}
	require.Len(t, got, 4)
	assert.Equal(t, "red bellnul", got[0])
	assert.Equal(t, "tab here del c1x", got[1])
	assert.Equal(t, strings.Repeat("é", maxLineBytes/2), got[2], "4 KiB of a 6,000 byte line, whole characters")
	assert.Equal(t, []any{nil, nil, true, nil}, truncated)
	assert.Equal(t, "no newline at the end", got[3])
}

// TestStopBeforeStart: a broker that fails before its listener is bound
// stops a supervisor that never started anything.
func TestStopBeforeStart(t *testing.T) {
	cfg, err := Load(context.Background(), []string{"QUEEN_KAFKA_EMBEDDED=true", "QUEEN_KAFKA_ADVERTISED_ADDR=localhost:9092",
		"QUEEN_KAFKA_BIN=" + os.Args[0]}, os.Executable)
	require.NoError(t, err)
	s := New(cfg, Options{})
	s.Stop()
	s.Start(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1})
	st := s.Status()
	assert.Equal(t, PhaseStopped, st.Phase)
	assert.Nil(t, st.PID)
}

// TestStartLineRedactsQueenURL: an explicit QUEEN_URL carrying a
// credential reaches the child whole but the start line without it.
func TestStartLineRedactsQueenURL(t *testing.T) {
	h := newHarness(t, "sleep", "QUEEN_URL=https://svc:hunter2@queen.example.com:6632")
	h.running(t, 0)
	var starts []map[string]any
	eventually(t, "the start line", func() bool {
		starts = h.logs.records("queen-kafka facade started (embedded)")
		return len(starts) > 0
	})
	assert.Equal(t, "https://svc:xxxxx@queen.example.com:6632", starts[0]["queen_url"])
	assert.Equal(t, FromExplicit, starts[0]["queen_url_from"])
	assert.NotContains(t, h.logs.String(), "hunter2")
}

// TestConfigRefusalIsNotRestarted: a child that refuses its configuration
// at boot (config.ExitConfig) is not restarted, since the same environment
// is refused again: phase failed, said once in the broker's log, and a stop
// ends it as usual. A child that exits 2 (Go's panic) is restarted.
func TestConfigRefusalIsNotRestarted(t *testing.T) {
	h := newHarness(t, "badconfig")
	st := h.await(t, "failed", func(st Status) bool { return st.Phase == PhaseFailed })
	require.NotNil(t, st.LastExit)
	assert.Equal(t, "exit status 78", *st.LastExit)
	assert.Nil(t, st.PID)
	assert.Zero(t, st.Restarts)
	assert.Zero(t, st.BackoffMs, "no restart is coming")
	h.clk.Advance(time.Hour)
	time.Sleep(50 * time.Millisecond)
	st = h.Status()
	assert.Equal(t, PhaseFailed, st.Phase, "never restarted")
	assert.Zero(t, st.Restarts)
	eventually(t, "the child's own line forwarded", func() bool { return strings.Contains(h.logs.String(), "QUEEN_KAFKA_X") })
	why := h.logs.records("queen-kafka facade refused its configuration (embedded); not restarting it: the same environment would be refused again. Its own log line above names the variable; fix it and restart queen-dev")
	require.Len(t, why, 1, "said once")
	assert.Equal(t, "exit status 78", why[0]["exit"])
	assert.Empty(t, h.logs.records("queen-kafka facade exited (embedded); restarting after the backoff"))
	h.Stop()
	assert.Equal(t, PhaseStopped, h.Status().Phase)

	c := newHarness(t, "crash")
	st = c.await(t, "backoff after a crash", func(st Status) bool { return st.Phase == PhaseBackoff })
	assert.Equal(t, "exit status 2", *st.LastExit)
	c.armed(t, time.Second)
	c.clk.Advance(time.Second)
	c.await(t, "restarted", func(st Status) bool { return st.Restarts == 1 })
}
