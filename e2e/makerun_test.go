package e2e

import (
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
)

// `make run` is `make build` then scripts/run.sh. These tests run the
// script on the binaries TestMain built (its BIN variable), on free ports
// given through its variables, as a terminal runs a foreground job: in a
// process group of its own, which Ctrl-C signals as a whole.

// runPorts are the ports one run of the script is given: queen-dev's, and
// the first node's Kafka and operator ports (node i adds i-1).
type runPorts struct{ dev, kafka, http int }

// env is the script's variables for these ports, the test's binaries and
// nodes facades (0: NODES unset, the script's default); more is added last
// (so it wins).
func (p runPorts) env(nodes int, more ...string) []string {
	env := append(testsupport.BaseEnv(),
		"BIN="+binDir,
		"QUEEN_DEV_ADDR=127.0.0.1:"+strconv.Itoa(p.dev),
		"BASE_PORT="+strconv.Itoa(p.kafka),
		"HTTP_BASE_PORT="+strconv.Itoa(p.http),
	)
	if nodes > 0 {
		env = append(env, "NODES="+strconv.Itoa(nodes))
	}
	return append(env, more...)
}

// all is every port a run with nodes facades binds.
func (p runPorts) all(nodes int) []int {
	out := []int{p.dev}
	for i := range nodes {
		out = append(out, p.kafka+i, p.http+i)
	}
	return out
}

// freeRunPorts finds queen-dev's port and two runs of three consecutive
// free loopback ports (the script numbers nodes' ports upwards).
func freeRunPorts(t testing.TB) runPorts {
	t.Helper()
	var held []net.Listener
	defer func() {
		for _, ln := range held {
			ln.Close()
		}
	}()
	run := func() int {
		for range 100 {
			first, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatalf("free port: %v", err)
			}
			base := first.Addr().(*net.TCPAddr).Port
			got := []net.Listener{first}
			for i := 1; i < 3; i++ {
				ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+i))
				if err != nil {
					break
				}
				got = append(got, ln)
			}
			held = append(held, got...)
			if len(got) == 3 {
				return base
			}
		}
		t.Fatal("no three consecutive free loopback ports in 100 tries")
		return 0
	}
	p := runPorts{kafka: run(), http: run()}
	dev, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	held = append(held, dev)
	p.dev = dev.Addr().(*net.TCPAddr).Port
	return p
}

// scriptPath is scripts/run.sh of the tree the binaries were built from.
func scriptPath(t testing.TB) string {
	t.Helper()
	requireBin(t, queenDevBin)
	requireBin(t, queenKafkBin)
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "scripts", "run.sh")
}

// runJob is one `make run` in the foreground of a (pretend) terminal:
// bash -c line, leading a process group of its own. Its stdout and stderr
// are files, not pipes, so that its exit is seen when it exits even if a
// process it left behind still holds them.
type runJob struct {
	cmd      *exec.Cmd
	out, err string // the files of stdout and stderr
	done     chan struct{}

	mu   sync.Mutex
	seen map[int]osProc // every product process seen below the job
}

func startRun(t testing.TB, line string, env []string) *runJob {
	t.Helper()
	return startRunIn(t, line, env, nil)
}

// startRunIn is startRun with stdin (nil: /dev/null).
func startRunIn(t testing.TB, line string, env []string, stdin *os.File) *runJob {
	t.Helper()
	dir := t.TempDir()
	j := &runJob{done: make(chan struct{}), out: filepath.Join(dir, "stdout"), err: filepath.Join(dir, "stderr")}
	j.cmd = exec.Command("bash", "-c", line)
	j.cmd.Env = env
	if stdin != nil {
		j.cmd.Stdin = stdin
	}
	for _, f := range []struct {
		path string
		to   *io.Writer
	}{{j.out, &j.cmd.Stdout}, {j.err, &j.cmd.Stderr}} {
		file, err := os.Create(f.path)
		if err != nil {
			t.Fatal(err)
		}
		defer file.Close() // the child has its own descriptor
		*f.to = file
	}
	// A terminal's foreground job leads its own process group; Pdeathsig
	// keeps a crashed test from leaving the script behind.
	j.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := j.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", line, err)
	}
	go func() {
		_ = j.cmd.Wait()
		close(j.done)
	}()
	// Whatever the test's outcome, nothing the job started may outlive it
	// on a shared machine: queen-dev runs in a session of its own, and a
	// process whose parent died is no longer below the job, so the
	// processes are recorded while the job runs.
	j.seen = map[int]osProc{}
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			j.children()
			select {
			case <-j.done:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() {
		select {
		case <-j.done:
		default:
			_ = syscall.Kill(-j.cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-j.done:
			case <-time.After(30 * time.Second):
				_ = syscall.Kill(-j.cmd.Process.Pid, syscall.SIGKILL)
				<-j.done
			}
		}
		for _, p := range survivors(j.seenProcs()) {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("---- make run's stdout ----\n%s\n---- its stderr ----\n%s",
				testsupport.Tail(j.stdout(), 16<<10), testsupport.Tail(j.stderr(), 256<<10))
		}
	})
	return j
}

func (j *runJob) stdout() string { b, _ := os.ReadFile(j.out); return string(b) }
func (j *runJob) stderr() string { b, _ := os.ReadFile(j.err); return string(b) }

func (j *runJob) seenProcs() []osProc {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Collect(maps.Values(j.seen))
}

// ctrlC signals the job's whole process group with SIGINT, as a terminal's
// Ctrl-C does, and returns the exit code (-1 for death by a signal); it
// fails t if the job is still running after limit.
func (j *runJob) ctrlC(t testing.TB, limit time.Duration) int {
	t.Helper()
	if err := syscall.Kill(-j.cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatalf("SIGINT to process group %d: %v", j.cmd.Process.Pid, err)
	}
	return j.wait(t, limit)
}

// wait waits up to limit for the job's exit and returns its code. On a
// timeout it logs where every process below the job is blocked, and has
// the product's processes (Go) dump their goroutines into its stderr.
func (j *runJob) wait(t testing.TB, limit time.Duration) int {
	t.Helper()
	select {
	case <-j.done:
		return j.cmd.ProcessState.ExitCode()
	case <-time.After(limit):
	}
	var b strings.Builder
	for _, p := range append([]osProc{{pid: j.cmd.Process.Pid, comm: "(job)"}}, descendants(j.cmd.Process.Pid)...) {
		wchan, _ := os.ReadFile(fmt.Sprintf("/proc/%d/wchan", p.pid))
		stat, _ := readProc(p.pid)
		fmt.Fprintf(&b, "pid %d ppid %d %s wchan=%s\n", p.pid, stat.ppid, stat.comm, wchan)
	}
	for _, p := range survivors(j.seenProcs()) {
		fmt.Fprintf(&b, "product process %d (%s) still running: SIGQUIT for its goroutines\n", p.pid, p.comm)
		_ = syscall.Kill(p.pid, syscall.SIGQUIT)
	}
	time.Sleep(time.Second)
	t.Fatalf("make run still running %s after it should have ended\n%s", limit, b.String())
	return 0
}

// banner waits until the script has printed its whole banner and returns
// its stdout; it fails t if the script ends or takes over limit first.
func (j *runJob) banner(t testing.TB, limit time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		if out := j.stdout(); strings.Contains(out, "Ctrl-C stops everything.") {
			return out
		}
		select {
		case <-j.done:
			t.Fatalf("make run ended (%v) before its banner", j.cmd.ProcessState)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no banner after %s", limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// osProc is a process as /proc shows it; start (clock ticks after boot) tells
// it apart from a later process given the same pid.
type osProc struct {
	pid, ppid int
	start     uint64
	comm      string
}

func readProc(pid int) (osProc, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return osProc{}, false
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return osProc{}, false
	}
	// After "pid (comm) ": state ppid pgrp session tty tpgid flags minflt
	// cminflt majflt cmajflt utime stime cutime cstime priority nice
	// threads itrealvalue starttime.
	f := strings.Fields(s[end+1:])
	if len(f) < 20 {
		return osProc{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	start, _ := strconv.ParseUint(f[19], 10, 64)
	return osProc{pid: pid, ppid: ppid, start: start, comm: s[open+1 : end]}, true
}

// descendants is every live process below root (children, grandchildren…).
func descendants(root int) []osProc {
	ents, _ := os.ReadDir("/proc")
	var all []osProc
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			if p, ok := readProc(pid); ok {
				all = append(all, p)
			}
		}
	}
	var out []osProc
	frontier := []int{root}
	for len(frontier) > 0 {
		parent := frontier[0]
		frontier = frontier[1:]
		for _, p := range all {
			if p.ppid == parent && testsupport.Alive(p.pid) {
				out = append(out, p)
				frontier = append(frontier, p.pid)
			}
		}
	}
	return out
}

// survivors is what of ps is still running (the same process, not a new
// one on a reused pid).
func survivors(ps []osProc) []osProc {
	var out []osProc
	for _, p := range ps {
		if now, ok := readProc(p.pid); ok && now.start == p.start && testsupport.Alive(p.pid) {
			out = append(out, p)
		}
	}
	return out
}

// children is the product's processes among the job's descendants now
// (bash may fork for the script, and the script for its waits).
func (j *runJob) children() []osProc {
	var out []osProc
	for _, p := range descendants(j.cmd.Process.Pid) {
		if p.comm == "queen-dev" || p.comm == "queen-kafka" {
			out = append(out, p)
		}
	}
	j.mu.Lock()
	for _, p := range out {
		j.seen[p.pid] = p
	}
	j.mu.Unlock()
	return out
}

func comms(ps []osProc) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.comm)
	}
	slices.Sort(out)
	return out
}

// accepting is the ports of ports that accept a connection.
func accepting(ports []int) []int {
	var out []int
	for _, p := range ports {
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(p), time.Second); err == nil {
			c.Close()
			out = append(out, p)
		}
	}
	return out
}

// TestMakeRun runs make run's script with one facade (embedded in
// queen-dev) and with three (a cluster beside queen-dev), on a data
// directory that does not exist yet: the banner carries the exact
// bootstrap.servers line, which a client takes verbatim as its
// configuration; Ctrl-C (SIGINT to the process group) exits 0 and stops
// every process the script started, queen-dev's own child included.
func TestMakeRun(t *testing.T) {
	script := scriptPath(t)
	for _, tc := range []struct {
		nodes int
		procs []string
	}{
		{1, []string{"queen-dev", "queen-kafka"}},
		{3, []string{"queen-dev", "queen-kafka", "queen-kafka", "queen-kafka"}},
	} {
		t.Run(fmt.Sprintf("NODES=%d", tc.nodes), func(t *testing.T) {
			ports := freeRunPorts(t)
			data := filepath.Join(t.TempDir(), "fresh", "data")
			j := startRun(t, shellQuote(script), ports.env(tc.nodes, "QUEEN_DEV_DATA="+data))
			out := j.banner(t, 60*time.Second)

			var servers []string
			for i := range tc.nodes {
				servers = append(servers, "127.0.0.1:"+strconv.Itoa(ports.kafka+i))
			}
			want := "bootstrap.servers=" + strings.Join(servers, ",")
			var lines []string
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(l, "bootstrap.servers") {
					lines = append(lines, l)
				}
			}
			if len(lines) != 1 || lines[0] != want {
				t.Fatalf("the banner's bootstrap lines are %q, want exactly %q", lines, want)
			}

			// The line, verbatim, is a client's whole configuration.
			topic := fmt.Sprintf("makerun-%d", tc.nodes)
			runKcat(t, "k:hello\n", "-X", lines[0], "-P", "-t", topic, "-p", "0", "-K:")
			got := runKcat(t, "", "-X", lines[0], "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q", "-f", "%k=%s\n")
			if got != "k=hello\n" {
				t.Fatalf("consumed %q through the bootstrap line, want %q", got, "k=hello\n")
			}

			started := j.children()
			if got := comms(started); !slices.Equal(got, tc.procs) {
				t.Fatalf("make run's processes are %q, want %q", got, tc.procs)
			}
			if code := j.ctrlC(t, 60*time.Second); code != 0 {
				t.Errorf("Ctrl-C: make run exited %d, want 0", code)
			}
			if left := survivors(started); len(left) > 0 {
				t.Errorf("still running after make run exited: %+v", left)
			}
			if open := accepting(ports.all(tc.nodes)); len(open) > 0 {
				t.Errorf("ports %v still accept connections after make run exited", open)
			}
			if _, err := os.Stat(data); err != nil {
				t.Errorf("the fresh data directory was not made: %v", err)
			}
		})
	}
}

// TestMakeRunPortInUse holds one of the ports make run would bind and runs
// the script: it must refuse before starting anything (no banner, none of
// the other ports bound), with exactly one line naming the port and the
// variable that moves it, and a non-zero exit.
func TestMakeRunPortInUse(t *testing.T) {
	script := scriptPath(t)
	for _, tc := range []struct {
		name  string
		nodes int
		held  func(runPorts) int
		envv  string
	}{
		{"NODES=3/queen-dev", 3, func(p runPorts) int { return p.dev }, "QUEEN_DEV_ADDR"},
		{"NODES=3/kafka-of-node-2", 3, func(p runPorts) int { return p.kafka + 1 }, "BASE_PORT"},
		{"NODES=3/operator-of-node-3", 3, func(p runPorts) int { return p.http + 2 }, "HTTP_BASE_PORT"},
		{"NODES=1/kafka", 1, func(p runPorts) int { return p.kafka }, "BASE_PORT"},
		{"NODES=1/operator", 1, func(p runPorts) int { return p.http }, "HTTP_BASE_PORT"},
		{"NODES=1/queen-dev", 1, func(p runPorts) int { return p.dev }, "QUEEN_DEV_ADDR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ports := freeRunPorts(t)
			held := tc.held(ports)
			ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(held))
			if err != nil {
				t.Fatalf("hold port %d: %v", held, err)
			}
			defer ln.Close()

			j := startRun(t, shellQuote(script), ports.env(tc.nodes, "QUEEN_DEV_DATA="+t.TempDir()))
			code := j.wait(t, 60*time.Second)
			if code == 0 {
				t.Errorf("make run exited 0 with port %d in use", held)
			}
			if strings.Contains(j.stdout(), "bootstrap.servers") {
				t.Errorf("make run printed its banner with port %d in use", held)
			}
			var lines []string
			for _, l := range strings.Split(strings.TrimSpace(j.stderr()), "\n") {
				if l != "" {
					lines = append(lines, l)
				}
			}
			if len(lines) != 1 || !strings.Contains(lines[0], strconv.Itoa(held)) || !strings.Contains(lines[0], tc.envv) {
				t.Errorf("make run said %q, want one line naming port %d and %s", lines, held, tc.envv)
			}
			others := slices.DeleteFunc(ports.all(tc.nodes), func(p int) bool { return p == held })
			if open := accepting(others); len(open) > 0 {
				t.Errorf("ports %v accept connections after make run refused to start", open)
			}
		})
	}
}

// shellQuote quotes s for bash.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// TestMakeRunTerminal runs the real `make run` recipe (its build taken as
// done: make -o build, on the binaries TestMain built) on a terminal, a
// pseudo-terminal that util-linux's script(1) opens, and types Ctrl-C into
// it: the terminal signals its foreground process group, make included.
// make must exit 0 with nothing left running: the script makes itself the
// terminal's foreground job, so that make is not signalled, and stops
// everything on the signal.
func TestMakeRunTerminal(t *testing.T) {
	for _, tool := range []string{"script", "make"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("this test needs %s: %v", tool, err)
		}
	}
	script := scriptPath(t)
	root := filepath.Dir(filepath.Dir(script))
	ports := freeRunPorts(t)
	// An *os.File, so that Wait does not wait for a copy from stdin; the
	// write end stays open until the end (an end of input is a ^D).
	typed, keys, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer keys.Close()
	makeRun := "make -s -C " + shellQuote(root) + " -o build run BIN=" + shellQuote(binDir)
	line := "exec script -qefc " + shellQuote(makeRun) + " /dev/null"
	j := startRunIn(t, line, ports.env(3, "QUEEN_DEV_DATA="+t.TempDir(), "SHELL=/bin/sh"), typed)
	typed.Close()
	j.banner(t, 60*time.Second)
	started := j.children()
	if got, want := comms(started), []string{"queen-dev", "queen-kafka", "queen-kafka", "queen-kafka"}; !slices.Equal(got, want) {
		t.Fatalf("make run's processes are %q, want %q", got, want)
	}
	if _, err := keys.Write([]byte{3}); err != nil { // Ctrl-C
		t.Fatal(err)
	}
	if code := j.wait(t, 60*time.Second); code != 0 {
		t.Errorf("make run exited %d after Ctrl-C on its terminal, want 0", code)
	}
	if out := j.stdout(); strings.Contains(out, "Interrupt") || strings.Contains(out, "Error") {
		t.Errorf("make reported the Ctrl-C as a failure:\n%s", testsupport.Tail(out, 4<<10))
	}
	if left := survivors(started); len(left) > 0 {
		t.Errorf("still running after make run exited: %+v", left)
	}
	if open := accepting(ports.all(3)); len(open) > 0 {
		t.Errorf("ports %v still accept connections after make run exited", open)
	}
}

// TestMakeRunRefusesBadVariables: a variable make run cannot use is one
// line naming it and a non-zero exit, before anything starts (before, NODES=0
// printed a banner with an empty bootstrap.servers and ran queen-dev alone).
func TestMakeRunRefusesBadVariables(t *testing.T) {
	script := scriptPath(t)
	for _, tc := range []struct{ set, names string }{
		{"NODES=0", "NODES"},
		{"NODES=three", "NODES"},
		{"BASE_PORT=65535", "BASE_PORT"}, // three nodes need 65535-65537
		{"HTTP_BASE_PORT=0", "HTTP_BASE_PORT"},
		{"QUEEN_DEV_ADDR=6632", "QUEEN_DEV_ADDR"},
		{"QUEEN_DEV_ADDR=127.0.0.1:65534 BASE_PORT=65532", "QUEEN_DEV_ADDR"},
		{"BASE_PORT=40001 HTTP_BASE_PORT=40003", "HTTP_BASE_PORT"}, // node 3's Kafka port is node 1's operator port
		{"BIN=" + filepath.Join(t.TempDir(), "nothing"), "make run"},
	} {
		t.Run(tc.set, func(t *testing.T) {
			ports := freeRunPorts(t)
			j := startRun(t, shellQuote(script), ports.env(3, append([]string{"QUEEN_DEV_DATA=" + t.TempDir()}, strings.Fields(tc.set)...)...))
			if code := j.wait(t, 30*time.Second); code == 0 {
				t.Errorf("make run exited 0 with %s", tc.set)
			}
			if out := j.stdout(); out != "" {
				t.Errorf("make run printed %q with %s", out, tc.set)
			}
			lines := strings.Split(strings.TrimSpace(j.stderr()), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], tc.names) {
				t.Errorf("make run said %q, want one line naming %s", lines, tc.names)
			}
			if open := accepting(ports.all(3)); len(open) > 0 {
				t.Errorf("ports %v accept connections after make run refused to start", open)
			}
		})
	}
}
