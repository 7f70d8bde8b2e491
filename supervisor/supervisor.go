package supervisor

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/queen-mq/queen-kafka/config"
	"github.com/queen-mq/queen-kafka/internal/clock"
	"github.com/queen-mq/queen-kafka/queen"
)

// Backoff is the restart policy: the first restart waits Initial, each
// further one twice the last up to Max, and a child that ran ResetAfter
// before it died starts over at Initial.
type Backoff struct {
	Initial, Max, ResetAfter time.Duration
}

// DefaultBackoff is the seed's: 1 s doubling to 30 s, reset after an hour
// of healthy running.
var DefaultBackoff = Backoff{Initial: time.Second, Max: 30 * time.Second, ResetAfter: time.Hour}

// Options are the supervisor's seams; the zero value is production.
type Options struct {
	Logger     *slog.Logger // the broker's log; nil discards
	Clock      Clock        // nil is the wall clock
	Backoff    Backoff      // zero is DefaultBackoff
	BrokerAuth bool         // the broker authenticates callers (QUEEN_DEV_TOKENS)
}

// Phases of Status.
const (
	PhaseStarting = "starting" // before the first start, or between a backoff and the next start
	PhaseRunning  = "running"
	PhaseBackoff  = "backoff" // the child exited; waiting to restart it
	PhaseStopping = "stopping"
	PhaseStopped  = "stopped"
	// PhaseFailed: the child refused its configuration at boot
	// (config.ExitConfig). The same environment would be refused again,
	// so it is not restarted; the broker runs on without it.
	PhaseFailed = "failed"
)

// Status is the "kafka" block of the broker's GET /status.
type Status struct {
	Mode     string  `json:"mode"` // always "embedded"
	Phase    string  `json:"phase"`
	PID      *int    `json:"pid"`      // the running child's, null when none runs
	Restarts int     `json:"restarts"` // starts after the first
	LastExit *string `json:"lastExit"` // how the last child ended ("signal: killed", "exit status 1", "start: …"); null before any
	UptimeMs int64   `json:"uptimeMs"` // of the running child, 0 when none runs
	// BackoffMs is the delay before the next start: while phase is backoff
	// the wait in progress, otherwise what an exit now would wait.
	BackoffMs int64 `json:"backoffMs"`
}

// Supervisor runs one child: New, then Start once the broker's listener is
// bound, then Stop when the broker stops.
type Supervisor struct {
	cfg        *Config
	log        *slog.Logger
	clock      Clock
	backoff    Backoff
	brokerAuth bool
	out        *budget

	startOnce, stopOnce sync.Once
	stop                chan struct{} // closed by Stop
	done                chan struct{} // closed when the loop has ended

	mu        sync.Mutex
	phase     string
	pid       int
	restarts  int
	lastExit  *string
	startedAt time.Time     // of the running child
	level     time.Duration // what the next exit waits, before the hour reset
	waiting   time.Duration // the backoff in progress
}

// New is a supervisor for cfg (from Load) that has not started anything.
func New(cfg *Config, o Options) *Supervisor {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Clock == nil {
		o.Clock = clock.Wall{}
	}
	if o.Backoff == (Backoff{}) {
		o.Backoff = DefaultBackoff
	}
	return &Supervisor{
		cfg: cfg, log: o.Logger, clock: o.Clock, backoff: o.Backoff, brokerAuth: o.BrokerAuth,
		out:  &budget{log: o.Logger, clock: o.Clock},
		stop: make(chan struct{}), done: make(chan struct{}),
		phase: PhaseStarting, level: o.Backoff.Initial,
	}
}

// Start wires the child to bound, the address the broker's listener
// actually bound (or to the explicit QUEEN_URL), and starts supervising.
// It returns at once; a child that fails to start is retried on the
// backoff like one that crashed. Only the first call does anything.
func (s *Supervisor) Start(bound net.Addr) {
	s.startOnce.Do(func() {
		url, from := s.cfg.queenURL(bound)
		if w := s.cfg.authWarning(s.brokerAuth); w != "" {
			s.log.Warn("queen-kafka facade (embedded): " + w)
		}
		go s.loop(s.cfg.childEnv(url), url, from)
	})
}

// Stop stops the child (SIGTERM to its group, SIGKILL after the grace) and
// returns once it is gone and its output is forwarded. Safe to call more
// than once, and before Start (which then never starts anything).
func (s *Supervisor) Stop() {
	s.stopOnce.Do(func() { close(s.stop) })
	s.startOnce.Do(func() {
		s.setPhase(PhaseStopped)
		close(s.done)
	})
	<-s.done
	s.out.flush()
}

// Status is a snapshot for GET /status.
func (s *Supervisor) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{Mode: "embedded", Phase: s.phase, Restarts: s.restarts, LastExit: s.lastExit}
	switch {
	case s.phase == PhaseBackoff:
		st.BackoffMs = s.waiting.Milliseconds()
	case s.pid != 0:
		pid := s.pid
		st.PID = &pid
		up := s.clock.Now().Sub(s.startedAt)
		st.UptimeMs = up.Milliseconds()
		st.BackoffMs = s.delayAfter(up).Milliseconds()
	case s.phase == PhaseStarting:
		st.BackoffMs = s.level.Milliseconds()
	}
	return st
}

// delayAfter is what an exit after a run of up waits: the current level,
// or Initial again after an hour of healthy running.
func (s *Supervisor) delayAfter(up time.Duration) time.Duration {
	if up >= s.backoff.ResetAfter {
		return s.backoff.Initial
	}
	return s.level
}

func (s *Supervisor) setPhase(p string) {
	s.mu.Lock()
	s.phase = p
	s.mu.Unlock()
}

// loop starts the child, waits for it to exit or for Stop, and restarts it
// on the backoff; it is the only goroutine that changes the child.
func (s *Supervisor) loop(env []string, url, from string) {
	defer close(s.done)
	defer s.setPhase(PhaseStopped)
	for {
		c, err := s.spawn(env)
		var up time.Duration
		if err != nil {
			s.exited("start: "+err.Error(), 0)
			s.log.Error("queen-kafka facade did not start (embedded)", "bin", s.cfg.Bin, "err", err)
		} else {
			s.log.Info("queen-kafka facade started (embedded)", "pid", c.pid, "bin", s.cfg.Bin,
				"queen_url", queen.RedactURL(url), "queen_url_from", from, "restarts", s.Status().Restarts)
			select {
			case <-c.exited:
			case <-s.stop:
				s.terminate(c)
				return
			}
			up = s.clock.Now().Sub(c.started)
			s.exited(c.state, up)
			s.reap(c)
			if c.code == config.ExitConfig {
				s.setPhase(PhaseFailed)
				s.log.Error("queen-kafka facade refused its configuration (embedded); not restarting it: the same environment would be refused again. Its own log line above names the variable; fix it and restart queen-dev",
					"exit", c.state, "bin", s.cfg.Bin)
				<-s.stop
				return
			}
		}
		delay := s.beginBackoff(up)
		s.log.Warn("queen-kafka facade exited (embedded); restarting after the backoff",
			"exit", *s.Status().LastExit, "uptime", up.Round(time.Millisecond).String(), "backoff", delay.String())
		select {
		case <-s.clock.After(delay):
		case <-s.stop:
			return
		}
		s.mu.Lock()
		s.restarts++
		s.phase = PhaseStarting
		s.mu.Unlock()
	}
}

// exited records how a child ended.
func (s *Supervisor) exited(how string, up time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastExit = &how
	s.pid = 0
	if up >= s.backoff.ResetAfter {
		s.level = s.backoff.Initial
	}
}

// beginBackoff enters the backoff phase and returns its delay; the next
// one doubles, up to Max.
func (s *Supervisor) beginBackoff(up time.Duration) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.level
	s.level = min(2*s.level, s.backoff.Max)
	s.phase, s.waiting = PhaseBackoff, d
	return d
}

// child is one started process.
type child struct {
	proc    *os.Process
	pid     int
	started time.Time
	exited  chan struct{} // closed once reaped; state is then set
	state   string        // how it ended, as os.ProcessState says it
	code    int           // its exit status, -1 when a signal ended it
	output  sync.WaitGroup
}

// spawn starts the child with env, its output forwarded through the
// budget. The start and the wait run on one goroutine locked to its OS
// thread for the child's whole life: PR_SET_PDEATHSIG fires when the
// thread that forked the child exits, and a Go thread can exit under a
// running child otherwise.
func (s *Supervisor) spawn(env []string) (*child, error) {
	c := &child{exited: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		cmd, pipes, err := s.command(env)
		if err == nil {
			err = cmd.Start()
			for _, w := range pipes[1] {
				w.Close() // the child holds its own copies
			}
		}
		if err != nil {
			for _, r := range pipes[0] {
				r.Close()
			}
			started <- err
			return
		}
		c.proc, c.pid, c.started = cmd.Process, cmd.Process.Pid, s.clock.Now()
		s.mu.Lock()
		s.pid, s.startedAt, s.phase = c.pid, c.started, PhaseRunning
		s.mu.Unlock()
		for i, r := range pipes[0] {
			c.output.Add(1)
			go func() {
				defer c.output.Done()
				defer r.Close()
				stream := [2]string{"stdout", "stderr"}[i]
				readLines(r, func(line []byte, truncated bool) {
					s.out.line(stream, c.pid, clean(line, truncated), truncated)
				})
			}()
		}
		started <- nil
		err = cmd.Wait()
		var ee *exec.ExitError
		switch {
		case err == nil || errors.As(err, &ee):
			c.state, c.code = cmd.ProcessState.String(), cmd.ProcessState.ExitCode()
		default:
			c.state, c.code = "wait: "+err.Error(), -1
		}
		close(c.exited)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return c, nil
}

// command is the child's exec.Cmd with a pipe per output stream: pipes[0]
// the read ends (ours), pipes[1] the write ends (the child's). The pipes
// are ours rather than exec's so that Wait returns when the child exits,
// not when the last holder of a pipe closes it.
func (s *Supervisor) command(env []string) (*exec.Cmd, [2][]*os.File, error) {
	var pipes [2][]*os.File
	for range 2 {
		r, w, err := os.Pipe()
		if err != nil {
			for _, f := range append(pipes[0], pipes[1]...) {
				f.Close()
			}
			return nil, [2][]*os.File{}, fmt.Errorf("output pipe: %w", err)
		}
		pipes[0], pipes[1] = append(pipes[0], r), append(pipes[1], w)
	}
	cmd := exec.Command(s.cfg.Bin)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = pipes[1][0], pipes[1][1]
	cmd.SysProcAttr = sysProcAttr()
	return cmd, pipes, nil
}

// reap kills what is left of an exited child's process group (a grandchild
// would otherwise hold the Kafka port against the restart) and waits, for a
// bounded time, for its output to be forwarded.
func (s *Supervisor) reap(c *child) {
	if err := signalGroup(c.pid, syscall.SIGKILL); err != nil {
		s.log.Warn("queen-kafka facade (embedded): SIGKILL to the exited child's process group", "pid", c.pid, "err", err)
	}
	drained := make(chan struct{})
	go func() {
		c.output.Wait()
		close(drained)
	}()
	// Wall time, not s.clock: this bound is not part of the restart
	// schedule, and a timer of it left armed on a test's clock (it is never
	// cancelled) fired in place of a backoff of the same length.
	select {
	case <-drained:
	case <-time.After(time.Second):
		// Something outside the group holds the pipe; its lines keep
		// arriving through the budget for as long as it lives.
	}
}

// terminate is a stop: SIGTERM to the group, SIGKILL after the grace.
func (s *Supervisor) terminate(c *child) {
	s.setPhase(PhaseStopping)
	s.log.Info("queen-kafka facade stopping (embedded)", "pid", c.pid, "signal", "SIGTERM", "grace", s.cfg.Grace.String())
	if err := signalGroup(c.pid, syscall.SIGTERM); err != nil {
		s.log.Warn("queen-kafka facade (embedded): SIGTERM to its process group", "pid", c.pid, "err", err)
	}
	select {
	case <-c.exited:
	case <-s.clock.After(s.cfg.Grace):
		s.log.Warn("queen-kafka facade still running after the grace (embedded); SIGKILL", "pid", c.pid, "grace", s.cfg.Grace.String())
		if err := signalGroup(c.pid, syscall.SIGKILL); err != nil {
			s.log.Warn("queen-kafka facade (embedded): SIGKILL to its process group", "pid", c.pid, "err", err)
		}
		// The leader itself too, directly: it is not reaped yet, so its
		// pid is still its own, and a stop must end even if the group
		// signal could not be delivered.
		_ = c.proc.Kill()
		<-c.exited
	}
	s.exited(c.state, s.clock.Now().Sub(c.started))
	s.reap(c)
	s.log.Info("queen-kafka facade stopped (embedded)", "pid", c.pid, "exit", c.state)
}
