package supervisor

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestMain makes this test binary its own fake facade: with
// SUPERVISOR_TEST_CHILD set it runs that behaviour instead of the tests, so
// the supervisor's tests start, kill and stop a real child process.
func TestMain(m *testing.M) {
	if mode := os.Getenv("SUPERVISOR_TEST_CHILD"); mode != "" {
		fakeChild(mode)
		return
	}
	os.Exit(m.Run())
}

func fakeChild(mode string) {
	switch mode {
	case "sleep": // up, then wait for a signal (SIGTERM's default kills it)
		fmt.Println("up")
	case "ignore": // ignores SIGTERM: only SIGKILL stops it
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ignoring SIGTERM")
	case "group": // a grandchild in the same process group
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "SUPERVISOR_TEST_CHILD=sleep")
		if err := cmd.Start(); err != nil {
			fmt.Println("grandchild:", err)
			os.Exit(1)
		}
		fmt.Printf("grandchild %d\n", cmd.Process.Pid)
	case "env":
		for _, kv := range os.Environ() {
			fmt.Println("env " + kv)
		}
	case "spew": // 1,000 lines over both streams, then exit
		w := bufio.NewWriter(os.Stdout)
		for i := range 1000 {
			out := w
			if i%2 == 1 {
				out = bufio.NewWriter(os.Stderr)
			}
			fmt.Fprintf(out, "spew %d\n", i)
			out.Flush()
		}
		os.Exit(0)
	case "bytes": // escape sequences, control bytes, a long line, then exit
		fmt.Print("\x1b[31mred\x1b[0m \x1b]0;title\x07bell\x00nul\r\n")
		fmt.Print("tab\there del\x7f c1\u009bx\n")
		fmt.Print(strings.Repeat("é", 3000) + "\n") // 6,000 bytes
		fmt.Print("no newline at the end")
		os.Exit(3)
	default:
		fmt.Println("unknown mode", mode)
		os.Exit(1)
	}
	for {
		time.Sleep(time.Hour)
	}
}

// fakeClock is a Clock the test advances; After channels fire when the
// time they wait for is reached.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	waits []fakeWait
}

type fakeWait struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) After(d time.Duration) <-chan time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- f.now
		return ch
	}
	f.waits = append(f.waits, fakeWait{at: f.now.Add(d), ch: ch})
	return ch
}

// pending is how many After calls wait for exactly d from now.
func (f *fakeClock) pending(d time.Duration) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, w := range f.waits {
		if w.at.Equal(f.now.Add(d)) {
			n++
		}
	}
	return n
}

func (f *fakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	keep := f.waits[:0]
	for _, w := range f.waits {
		if !w.at.After(f.now) {
			w.ch <- f.now
		} else {
			keep = append(keep, w)
		}
	}
	f.waits = keep
}

// logBuf is a JSON slog destination the test reads records back from.
type logBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuf) logger() *slog.Logger { return slog.New(slog.NewJSONHandler(b, nil)) }

// records are the log records so far whose message is msg ("" = all).
func (b *logBuf) records(msg string) []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(b.buf.String(), "\n") {
		if line == "" {
			continue
		}
		var r map[string]any
		if json.Unmarshal([]byte(line), &r) == nil && (msg == "" || r["msg"] == msg) {
			out = append(out, r)
		}
	}
	return out
}

func (b *logBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// eventually polls cond until it holds; the limit is only there so that a
// broken supervisor fails the test instead of hanging it.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never happened: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// alive reports whether pid is a process that has not exited (a zombie
// nobody reaped counts as exited).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	// pid (comm) STATE …; comm may hold spaces, so read after the last ')'.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
