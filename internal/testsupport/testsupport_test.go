package testsupport

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain doubles as the child process the Proc tests run: with
// TESTSUPPORT_CHILD_ADDR set it listens there (answering GET /health), logs
// a line saying so, and exits 3 on SIGTERM.
func TestMain(m *testing.M) {
	if addr := os.Getenv("TESTSUPPORT_CHILD_ADDR"); addr != "" {
		child(addr)
		return
	}
	os.Exit(m.Run())
}

func child(addr string) {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	go func() {
		_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	}()
	fmt.Fprintf(os.Stderr, "child listening addr=%s\n", addr)
	<-term
	os.Exit(3)
}

func childProc(t *testing.T) (*Proc, string) {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", FreePort(t))
	p := &Proc{
		Name:  "child@" + addr,
		Bin:   os.Args[0],
		Args:  []string{"-test.run=^$"},
		Env:   EnvList(map[string]string{"TESTSUPPORT_CHILD_ADDR": addr}),
		Ready: WaitTCP(addr, 15*time.Second),
	}
	t.Cleanup(p.Kill)
	return p, addr
}

func TestProcLifecycle(t *testing.T) {
	p, addr := childProc(t)
	if p.Running() || p.Pid() != 0 {
		t.Fatalf("running %v, pid %d before Start", p.Running(), p.Pid())
	}
	if err := p.Start(); err != nil {
		t.Fatalf("start: %v\n%s", err, p.Out.String())
	}
	if !p.Running() || p.Pid() == 0 {
		t.Fatalf("running %v, pid %d after Start", p.Running(), p.Pid())
	}
	if err := p.Restart(); err == nil {
		t.Fatal("restart while running accepted")
	}
	line, err := p.WaitLine(func(l string) bool { return strings.Contains(l, "listening") }, 5*time.Second)
	if err != nil || !strings.Contains(line, addr) {
		t.Fatalf("boot line %q: %v", line, err)
	}
	if code := p.Terminate(t, 10*time.Second); code != 3 {
		t.Fatalf("exit code %d after SIGTERM, want 3", code)
	}
	if p.Running() {
		t.Fatal("running after Terminate")
	}

	// Restart on the same environment; SIGKILL ends it with -1.
	if err := p.Restart(); err != nil {
		t.Fatalf("restart: %v\n%s", err, p.Out.String())
	}
	if err := WaitHealth("http://"+addr, 5*time.Second)(p); err != nil {
		t.Fatal(err)
	}
	p.Kill()
	if p.Running() || p.ExitCode() != -1 || p.ExitErr() == nil {
		t.Fatalf("after kill: running %v, code %d, err %v", p.Running(), p.ExitCode(), p.ExitErr())
	}
	out := p.Out.String()
	if strings.Count(out, "=== testsupport: starting "+p.Name) != 2 || strings.Count(out, "exited") != 2 {
		t.Fatalf("markers:\n%s", out)
	}
}

// A child that exits before it is ready fails Start with that, not with a
// deadline passed.
func TestReadyFailsWhenTheChildExits(t *testing.T) {
	p, _ := childProc(t)
	p.Env = EnvList(map[string]string{"TESTSUPPORT_CHILD_ADDR": "not-an-address"})
	err := p.Start()
	if err == nil || !strings.Contains(err.Error(), "exited before") {
		t.Fatalf("start: %v", err)
	}
	if _, err := p.WaitLine(func(string) bool { return false }, time.Minute); err == nil || !strings.Contains(err.Error(), "exited") {
		t.Fatalf("WaitLine on an exited child: %v", err)
	}
	if code := p.ExitCode(); code != 2 {
		t.Fatalf("exit code %d, want 2", code)
	}
}

func TestLogBuffer(t *testing.T) {
	var b LogBuffer
	fmt.Fprint(&b, "one\n")
	off := b.Len()
	fmt.Fprint(&b, "two\n")
	if got := b.From(off); got != "two\n" {
		t.Errorf("From(%d) = %q", off, got)
	}
	if got := b.From(100); got != "one\ntwo\n" {
		t.Errorf("From past the end = %q", got)
	}
	if b.String() != "one\ntwo\n" {
		t.Errorf("String = %q", b.String())
	}
	if got := Tail("abcdef", 3); got != "…def" {
		t.Errorf("Tail = %q", got)
	}
	if got := Tail("abc", 3); got != "abc" {
		t.Errorf("Tail uncut = %q", got)
	}
}

func TestEnvList(t *testing.T) {
	t.Setenv("QUEEN_URL", "http://from-the-shell")
	env := EnvList(map[string]string{"B": "2", "A": "1"})
	joined := strings.Join(env, "\n")
	if strings.Contains(joined, "QUEEN_URL") {
		t.Errorf("the shell's QUEEN_URL leaked: %q", env)
	}
	if !strings.HasSuffix(joined, "A=1\nB=2") {
		t.Errorf("extras not last in key order: %q", env)
	}
}

func TestProcCPU(t *testing.T) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		d, err := ProcCPU(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if d > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no CPU time charged to a busy process")
		}
		for i := 0; i < 1e7; i++ { // burn a little CPU
			_ = i * i
		}
	}
	if _, err := ProcCPU(-1); err == nil {
		t.Error("no error for a process that does not exist")
	}
}

func TestServeClosesServerThenStop(t *testing.T) {
	var stopped bool
	var url string
	t.Run("inner", func(t *testing.T) {
		srv := Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }), func() { stopped = true })
		url = srv.URL
		resp, err := http.Get(url)
		if err != nil || resp.StatusCode != 204 {
			t.Fatalf("%v %v", resp, err)
		}
		resp.Body.Close()
	})
	if !stopped {
		t.Error("stop not called when the test ended")
	}
	if resp, err := http.Get(url); err == nil {
		resp.Body.Close()
		t.Error("server still serving after the test ended")
	}
}

// recTB records what AttachLogs does with a test; the embedded TB is never
// called.
type recTB struct {
	testing.TB
	failed   bool
	cleanups []func()
	logs     []string
}

func (r *recTB) Helper()          {}
func (r *recTB) Name() string     { return "TestRec" }
func (r *recTB) Failed() bool     { return r.failed }
func (r *recTB) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recTB) Logf(format string, args ...any) {
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}

// AttachLogs dumps only what was written after it, and only for a failed
// test.
func TestAttachLogsDumpsOnFailureOnly(t *testing.T) {
	for _, failed := range []bool{false, true} {
		p := &Proc{Name: "child", Out: &LogBuffer{}}
		fmt.Fprint(p.Out, "before\n")
		r := &recTB{failed: failed}
		p.AttachLogs(r)
		fmt.Fprint(p.Out, "during\n")
		for _, f := range r.cleanups {
			f()
		}
		if !failed {
			if len(r.logs) != 0 {
				t.Errorf("passed test got a dump: %q", r.logs)
			}
			continue
		}
		if len(r.logs) != 1 || !strings.Contains(r.logs[0], "child output during TestRec") ||
			!strings.Contains(r.logs[0], "during") || strings.Contains(r.logs[0], "before") {
			t.Errorf("failed test's dump: %q", r.logs)
		}
	}
}

func TestPushBody(t *testing.T) {
	if n := len(kibRecord()); n != 1024 {
		t.Fatalf("KiBRecord is %d bytes", n)
	}
	var body struct {
		Items []struct {
			Queue     string          `json:"queue"`
			Partition string          `json:"partition"`
			Payload   json.RawMessage `json:"payload"`
		} `json:"items"`
	}
	raw := pushBody(3, 5)
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatal(err)
	}
	if len(body.Items) != 5 || strings.Count(string(raw), kibRecord()) != 5 {
		t.Fatalf("%d items, %d records", len(body.Items), strings.Count(string(raw), kibRecord()))
	}
	for _, it := range body.Items {
		if it.Queue != "bench" || it.Partition != "3" || !json.Valid(it.Payload) {
			t.Fatalf("item %s/%s %.40s", it.Queue, it.Partition, it.Payload)
		}
	}
}

func TestFakeClock(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewFakeClock(start)
	now := c.After(0)
	select {
	case <-now:
	default:
		t.Fatal("After(0) must fire at once")
	}
	one, two := c.After(time.Second), c.After(2*time.Second)
	if c.Waiters() != 2 || c.WaitersFor(time.Second) != 1 || c.WaitersFor(2*time.Second) != 1 {
		t.Fatalf("waiters %d, for 1s %d, for 2s %d", c.Waiters(), c.WaitersFor(time.Second), c.WaitersFor(2*time.Second))
	}
	c.Advance(999 * time.Millisecond)
	select {
	case <-one:
		t.Fatal("fired before its time")
	default:
	}
	c.Advance(time.Millisecond)
	if at := <-one; !at.Equal(start.Add(time.Second)) {
		t.Fatalf("fired at %v", at)
	}
	if c.Waiters() != 1 || c.WaitersFor(time.Second) != 1 {
		t.Fatalf("after one fired: waiters %d, for 1s %d", c.Waiters(), c.WaitersFor(time.Second))
	}
	c.Advance(time.Hour)
	<-two
	if c.Waiters() != 0 || !c.Now().Equal(start.Add(time.Hour+time.Second)) {
		t.Fatalf("waiters %d now %v", c.Waiters(), c.Now())
	}
}

// WaitHealth takes an answer only from the process itself: a port another
// process holds answers /health, but the child, which cannot bind it,
// exits, and the wait fails with that rather than succeeding on the other
// process's answer.
func TestWaitHealthIgnoresAnotherProcess(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { _ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})) }()
	addr := ln.Addr().String()
	if !Listens(os.Getpid(), addr) {
		t.Fatal("this process holds the listener but Listens says no")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := &Proc{Name: "child", Bin: exe, Env: EnvList(map[string]string{"TESTSUPPORT_CHILD_ADDR": addr}), Out: &LogBuffer{}}
	p.Ready = WaitHealth("http://"+addr, 5*time.Second)
	if err := p.Start(); err == nil {
		p.Kill()
		t.Fatal("ready on another process's /health")
	}
	if Listens(p.Pid(), addr) {
		t.Fatal("the child never held the listener but Listens says yes")
	}
}
