package contract

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/queen"
)

// devBinary is the queen-dev executable TestMain builds once.
var devBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "queen-contract-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	devBinary = filepath.Join(dir, "queen-dev")
	build := exec.Command("go", "build", "-o", devBinary, "github.com/queen-mq/queen-kafka/cmd/queen-dev")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building cmd/queen-dev:", err)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	shared = &devProc{data: filepath.Join(dir, "shared-data")}
	if err := shared.launch(); err != nil {
		fmt.Fprintln(os.Stderr, "starting the shared queen-dev:", err)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	code := m.Run()
	if msg := shared.stop(); msg != "" {
		fmt.Fprintln(os.Stderr, "shared queen-dev:", msg)
		code = 1
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// shared is the one default queen-dev (auth off, faults off) that most
// tests use; they keep out of each other's way with uniq names.
var shared *devProc

// devProc is one running queen-dev process.
type devProc struct {
	url  string
	addr string
	data string
	env  map[string]string
	cmd  *exec.Cmd
	logs *syncBuffer
	done chan struct{}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// freeAddr finds a loopback port nobody listens on right now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// startDev runs queen-dev on a fresh port and data dir (data "" = a new
// temp dir) with env added, and waits for GET /health. The process is
// stopped (SIGTERM, then SIGKILL) when the test ends.
func startDev(t testing.TB, data string, env map[string]string) *devProc {
	t.Helper()
	if data == "" {
		data = t.TempDir()
	}
	p := &devProc{data: data, env: env}
	if err := p.launch(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if msg := p.stop(); msg != "" {
			t.Error(msg)
		}
	})
	return p
}

// launch starts the process on a fresh loopback port and waits until it
// answers GET /health.
func (p *devProc) launch() error {
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ { // a freed port can be taken in between
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		p.addr, p.url, p.logs = addr, "http://"+addr, &syncBuffer{}
		cmd := exec.Command(devBinary)
		cmd.Env = append(os.Environ(), "QUEEN_DEV_ADDR="+p.addr, "QUEEN_DEV_DATA="+p.data)
		for k, v := range p.env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		cmd.Stdout, cmd.Stderr = p.logs, p.logs
		if err := cmd.Start(); err != nil {
			return err
		}
		p.cmd = cmd
		p.done = make(chan struct{})
		go func(done chan struct{}) { _ = cmd.Wait(); close(done) }(p.done)
		if lastErr = p.waitHealthy(10 * time.Second); lastErr == nil {
			return nil
		}
		p.kill()
	}
	return fmt.Errorf("queen-dev did not become healthy: %v\n%s", lastErr, p.logs.String())
}

func (p *devProc) waitHealthy(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	hc := &http.Client{Timeout: time.Second}
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return fmt.Errorf("process exited")
		default:
		}
		resp, err := hc.Get(p.url + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	return fmt.Errorf("no 200 from /health within %v", limit)
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *devProc) kill() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop ends the process with SIGTERM (SIGKILL after 5 s) and returns a
// complaint ("" when none): a SIGTERM ignored or a panic in the log.
func (p *devProc) stop() string {
	if p.cmd == nil || p.cmd.Process == nil {
		return ""
	}
	var msg string
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			msg = "queen-dev ignored SIGTERM for 5 s; killed. "
			p.kill()
		}
	}
	if strings.Contains(p.logs.String(), "panic") {
		msg += "queen-dev logged a panic"
	}
	if msg != "" {
		msg += "\n" + p.logs.String()
	}
	return msg
}

func (p *devProc) pid() int { return p.cmd.Process.Pid }

// client builds a queen.Client for this process with token.
func (p *devProc) client(t testing.TB, token string) *queen.Client {
	t.Helper()
	c, err := queen.New(queen.Config{URL: p.url, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// rawResp is an HTTP exchange the typed client would not let us make (a
// malformed body, an unchecked shape).
type rawResp struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r rawResp) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, r.Body)
	}
	return m
}

// raw sends body verbatim with the contract's headers; authz is the whole
// Authorization header value ("" for none).
func (p *devProc) raw(t testing.TB, method, path, authz, body string) rawResp {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, p.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	hc := &http.Client{Timeout: 20 * time.Second}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return rawResp{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// uniq returns a name unique within the test binary run, so tests sharing
// one process never see each other's queues or keys.
func uniq(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, uniqN.Add(1))
}

var uniqN atomic.Int64
