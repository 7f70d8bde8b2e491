package contract

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
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
	if err := testsupport.GoBuild("", devBinary, "github.com/queen-mq/queen-kafka/cmd/queen-dev"); err != nil {
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

// devProc is one queen-dev process, relaunched on a fresh port (and the
// same data directory) by launch.
type devProc struct {
	*testsupport.Proc
	url  string
	data string
	env  map[string]string
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
// answers GET /health (10 s).
func (p *devProc) launch() error {
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ { // a freed port can be taken in between
		addr, err := testsupport.FreeAddr()
		if err != nil {
			return err
		}
		p.url = "http://" + addr
		p.Proc = testsupport.QueenDev(devBinary, addr, p.data, p.env)
		p.Ready = testsupport.WaitHealth(p.url, 10*time.Second)
		if lastErr = p.Start(); lastErr == nil {
			return nil
		}
		p.Kill()
	}
	return fmt.Errorf("queen-dev did not become healthy: %v\n%s", lastErr, p.Out.String())
}

// stop ends the process with SIGTERM (SIGKILL after 5 s) and returns a
// complaint ("" when none): a SIGTERM ignored or a panic in the log.
func (p *devProc) stop() string {
	if p.Proc == nil || p.Pid() == 0 {
		return ""
	}
	var msg string
	if !p.Signal(syscall.SIGTERM, 5*time.Second) {
		msg = "queen-dev ignored SIGTERM for 5 s; killed. "
		p.Kill()
	}
	if strings.Contains(p.Out.String(), "panic") {
		msg += "queen-dev logged a panic"
	}
	if msg != "" {
		msg += "\n" + p.Out.String()
	}
	return msg
}

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
