package supervisor

import (
	"bufio"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queen-mq/queen-kafka/config"
	"github.com/queen-mq/queen-kafka/internal/testsupport"
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
			if i == 1 {
				// Both streams' readers forward a line before the
				// flood, whichever of them the scheduler runs first.
				time.Sleep(100 * time.Millisecond)
			}
		}
		os.Exit(0)
	case "bytes": // escape sequences, control bytes, a long line, then exit
		fmt.Print("\x1b[31mred\x1b[0m \x1b]0;title\x07bell\x00nul\r\n")
		fmt.Print("tab\there del\x7f c1\u009bx\n")
		fmt.Print(strings.Repeat("é", 3000) + "\n") // 6,000 bytes
		fmt.Print("no newline at the end")
		os.Exit(3)
	case "badconfig": // the facade refusing its configuration at boot
		fmt.Fprintln(os.Stderr, `level=ERROR msg="fatal configuration" err="QUEEN_KAFKA_X: out of range"`)
		os.Exit(config.ExitConfig)
	case "crash": // what Go's runtime exits with on a panic
		fmt.Fprintln(os.Stderr, "panic: boom")
		os.Exit(2)
	default:
		fmt.Println("unknown mode", mode)
		os.Exit(1)
	}
	for {
		time.Sleep(time.Hour)
	}
}

func newFakeClock() *testsupport.FakeClock {
	return testsupport.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
}

// logBuf is a JSON slog destination the test reads records back from.
type logBuf struct{ testsupport.LogBuffer }

func (b *logBuf) logger() *slog.Logger { return slog.New(slog.NewJSONHandler(b, nil)) }

// records are the log records so far whose message is msg ("" = all).
func (b *logBuf) records(msg string) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(b.String(), "\n") {
		var r map[string]any
		if json.Unmarshal([]byte(line), &r) == nil && (msg == "" || r["msg"] == msg) {
			out = append(out, r)
		}
	}
	return out
}

// eventually polls cond until it holds; the limit is only there so that a
// broken supervisor fails the test instead of hanging it.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 20*time.Second, 5*time.Millisecond, "never happened: %s", what)
}
