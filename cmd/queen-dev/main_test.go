package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
	"github.com/queen-mq/queen-kafka/internal/version"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/queen/dev"
)

// TestMain lets the tests run this binary's main in a child process.
func TestMain(m *testing.M) {
	if os.Getenv("QUEEN_DEV_TEST_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestLoadConfig(t *testing.T) {
	env := func(kv map[string]string) envconfig.Lookuper { return envconfig.MapLookuper(kv) }
	c, err := loadConfig(env(nil))
	// The body ceiling's default is declared (config/) as the broker's own.
	if err != nil || c.Addr != "127.0.0.1:6632" || c.Data != "./.queen-dev" || c.tokens != nil || c.Faults || c.MaxBodyBytes != dev.DefaultMaxBodyBytes {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	c, err = loadConfig(env(map[string]string{"QUEEN_DEV_ADDR": "0.0.0.0:7000", "QUEEN_DEV_DATA": "/tmp/x",
		"QUEEN_DEV_TOKENS": "a=t1,b=t2:ro", "QUEEN_DEV_FAULTS": "true", "QUEEN_MAX_BODY_BYTES": "1024"}))
	if err != nil || c.Addr != "0.0.0.0:7000" || c.Data != "/tmp/x" || len(c.tokens) != 2 || !c.Faults || c.MaxBodyBytes != 1024 {
		t.Fatalf("set: %+v %v", c, err)
	}
	for name, bad := range map[string]map[string]string{
		"QUEEN_DEV_ADDR":       {"QUEEN_DEV_ADDR": "nohost"},
		"QUEEN_DEV_DATA":       {"QUEEN_DEV_DATA": " "},
		"QUEEN_DEV_TOKENS":     {"QUEEN_DEV_TOKENS": "tok"},
		"QUEEN_DEV_FAULTS":     {"QUEEN_DEV_FAULTS": "maybe"},
		"QUEEN_MAX_BODY_BYTES": {"QUEEN_MAX_BODY_BYTES": "-1"},
	} {
		_, err := loadConfig(env(bad))
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", name, err)
		}
	}
	_, err = loadConfig(env(map[string]string{"QUEEN_DEV_TOKENS": "secret-token=t:zz"}))
	if err == nil || strings.Contains(err.Error(), "secret-token") {
		t.Errorf("token error must not echo the token: %v", err)
	}
}

// proc is a queen-dev child process: this test binary run as its own main.
type proc struct {
	*testsupport.Proc
	url  string
	boot string
}

var addrRE = regexp.MustCompile(`addr=(127\.0\.0\.1:\d+)`)

// start runs queen-dev on a port of its choosing with env added, killed
// when t ends, and returns once it has logged its boot line (20 s).
func start(t testing.TB, env ...string) *proc {
	t.Helper()
	p := &proc{Proc: &testsupport.Proc{
		Name: "queen-dev",
		Bin:  os.Args[0],
		Args: []string{"-test.run=^$"},
		Env:  append(os.Environ(), append([]string{"QUEEN_DEV_TEST_MAIN=1", "QUEEN_DEV_ADDR=127.0.0.1:0"}, env...)...),
	}}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	l, err := p.WaitLine(func(l string) bool { return addrRE.MatchString(l) && strings.Contains(l, "listening") }, 20*time.Second)
	if err != nil {
		t.Fatalf("queen-dev did not log its boot line: %v\n%s", err, p.Out.String())
	}
	p.boot = l
	p.url = "http://" + addrRE.FindStringSubmatch(l)[1]
	return p
}

func client(t *testing.T, url, token string) *queen.Client {
	qc, err := queen.New(queen.Config{URL: url, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	return qc
}

// The binary: boot line without secrets, SIGKILL keeps every acknowledged
// write, SIGTERM exits 0 after a final sync.
func TestBinaryKillRestartAndTerm(t *testing.T) {
	dir := t.TempDir()
	env := []string{"QUEEN_DEV_DATA=" + dir, "QUEEN_DEV_TOKENS=very-secret=tenant1"}
	p := start(t, env...)
	if strings.Contains(p.boot, "very-secret") || !strings.Contains(p.boot, "auth=on") || !strings.Contains(p.boot, "tenants=1") ||
		!strings.Contains(p.boot, "faults=false") || !strings.Contains(p.boot, dir) {
		t.Errorf("boot line %q", p.boot)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	qc := client(t, p.url, "very-secret")
	var acked []queen.PushResult
	for i := 0; i < 20; i++ {
		res, err := qc.Push(ctx, []queen.PushItem{{Queue: "q", Partition: "0", Payload: json.RawMessage(`[` + strings.Repeat("1,", i) + `0]`)}})
		if err != nil {
			t.Fatal(err)
		}
		acked = append(acked, res...)
	}
	kv, err := qc.KV(ctx, []queen.KVOp{{Op: queen.OpPut, NS: queen.Namespace, Key: "qk:x", Value: json.RawMessage(`{"v":1}`), Forever: true}})
	if err != nil {
		t.Fatal(err)
	}
	p.Kill()

	p2 := start(t, env...)
	qc = client(t, p2.url, "very-secret")
	fr, err := qc.Fetch(ctx, queen.FetchRequest{Entries: []queen.FetchEntry{{Queue: "q", Partition: "0", Offset: 0}}})
	if err != nil {
		t.Fatal(err)
	}
	if int(fr[0].HighWatermark) != len(acked) || len(fr[0].Records) != len(acked) {
		t.Fatalf("hwm %d, %d records after kill -9, %d acknowledged", fr[0].HighWatermark, len(fr[0].Records), len(acked))
	}
	for i, r := range fr[0].Records {
		want := `[` + strings.Repeat("1,", i) + `0]`
		if r.Offset != *acked[i].Offset || string(r.Payload) != want || r.TransactionID != acked[i].TransactionID {
			t.Errorf("record %d: %+v", i, r)
		}
	}
	got, err := qc.KV(ctx, []queen.KVOp{{Op: queen.OpGet, NS: queen.Namespace, Key: "qk:x"}})
	if err != nil || !*got[0].Found || got[0].Version != kv[0].Version {
		t.Errorf("kv after kill -9: %+v %v", got, err)
	}

	if !p2.Signal(syscall.SIGTERM, 20*time.Second) {
		t.Fatal("no exit after SIGTERM")
	}
	if err := p2.ExitErr(); err != nil {
		t.Errorf("SIGTERM exit: %v", err)
	}
}

func TestBinaryBadEnvAndUsage(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "QUEEN_DEV_TEST_MAIN=1", "QUEEN_DEV_FAULTS=perhaps")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 || !strings.Contains(string(out), "QUEEN_DEV_FAULTS") {
		t.Errorf("bad env: %v %s", err, out)
	}
	cmd = exec.Command(os.Args[0], "-test.run=^$", "-h")
	cmd.Env = append(os.Environ(), "QUEEN_DEV_TEST_MAIN=1")
	out, _ = cmd.CombinedOutput()
	if !strings.Contains(string(out), "QUEEN_DEV_ADDR") || !strings.Contains(string(out), "not Queen") {
		t.Errorf("-h: %s", out)
	}
}

// A damaged store is a fatal boot: a non-zero exit and one log line naming
// the data directory, the store left as it was.
func TestBinaryDamagedStoreRefusesBoot(t *testing.T) {
	dir := t.TempDir()
	env := []string{"QUEEN_DEV_DATA=" + dir}
	p := start(t, env...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	qc := client(t, p.url, "")
	for i := 0; i < 6; i++ {
		if _, err := qc.Push(ctx, []queen.PushItem{{Queue: "q", Partition: "0", Payload: json.RawMessage(`"x"`)}}); err != nil {
			t.Fatal(err)
		}
	}
	if code := p.Terminate(t, 20*time.Second); code != 0 {
		t.Fatalf("SIGTERM exit %d", code)
	}

	manifests, err := filepath.Glob(filepath.Join(dir, "MANIFEST-*"))
	if err != nil || len(manifests) == 0 {
		t.Fatalf("no manifest in %s: %v", dir, err)
	}
	damaged := map[string][]byte{}
	for _, m := range manifests {
		data := bytes.Repeat([]byte{0x5a}, 4096)
		if err := os.WriteFile(m, data, 0o644); err != nil {
			t.Fatal(err)
		}
		damaged[m] = data
	}

	bad := &testsupport.Proc{Name: "queen-dev", Bin: os.Args[0], Args: []string{"-test.run=^$"},
		Env: append(os.Environ(), "QUEEN_DEV_TEST_MAIN=1", "QUEEN_DEV_ADDR=127.0.0.1:0", "QUEEN_DEV_DATA="+dir)}
	if err := bad.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bad.Kill)
	select {
	case <-bad.Done():
	case <-time.After(20 * time.Second): // a broker that boots anyway serves forever
		t.Fatalf("damaged store: the broker started instead of refusing\n%s", bad.Out.String())
	}
	if bad.ExitCode() <= 0 {
		t.Fatalf("damaged store: exit %d, want non-zero\n%s", bad.ExitCode(), bad.Out.String())
	}
	var lines []string // what the broker wrote, without Proc's start and exit markers
	for _, l := range strings.Split(strings.TrimSpace(bad.Out.String()), "\n") {
		if !strings.HasPrefix(l, "=== testsupport:") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], dir) || !strings.Contains(lines[0], "level=ERROR") {
		t.Errorf("want one error line naming %s, got:\n%s", dir, bad.Out.String())
	}
	for m, data := range damaged {
		if got, _ := os.ReadFile(m); !bytes.Equal(got, data) {
			t.Errorf("the refused store's %s was modified", m)
		}
	}
}

// TestBinaryVersion: queen-dev --version (and -version, version) prints
// its name and the build's version, as queen-kafka --version does, and
// exits 0 without booting; an unknown argument is refused with exit 2.
func TestBinaryVersion(t *testing.T) {
	for _, arg := range []string{"--version", "-version", "version"} {
		cmd := exec.Command(os.Args[0], "-test.run=^$", arg)
		cmd.Env = append(os.Environ(), "QUEEN_DEV_TEST_MAIN=1", "QUEEN_DEV_ADDR=nohost")
		out, err := cmd.CombinedOutput()
		if err != nil || string(out) != "queen-dev "+version.String()+"\n" {
			t.Errorf("%s: %v %q", arg, err, out)
		}
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$", "--bogus")
	cmd.Env = append(os.Environ(), "QUEEN_DEV_TEST_MAIN=1")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "-h") {
		t.Errorf("unknown argument: %v %s", err, out)
	}
}

// In the default fsync mode an acknowledgement waits for its log record's
// write, not its fsync: a SIGKILL in the middle of concurrent pushes and KV
// writes (with the background fsync a minute away, so that nothing
// acknowledged was fsynced but by chance) loses none of them, and a
// restart serves each at the offset, payload and version it was answered
// with.
func TestBinaryKillUnderLoadKeepsWritten(t *testing.T) {
	dir := t.TempDir()
	env := []string{"QUEEN_DEV_DATA=" + dir, "QUEEN_DEV_FSYNC=1m"}
	p := start(t, env...)
	if !strings.Contains(p.boot, "fsync=1m0s") {
		t.Errorf("boot line %q does not name the fsync mode", p.boot)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	qc := client(t, p.url, "")
	const writers = 8
	type ack struct {
		offset  int64
		payload string
	}
	acked := make([][]ack, writers)    // per writer (its own partition), in offset order
	versions := make([]int64, writers) // the last acknowledged version of the writer's KV row
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			part := strconv.Itoa(w)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				items := make([]queen.PushItem, 10)
				for j := range items {
					items[j] = queen.PushItem{Queue: "q", Partition: part, Payload: json.RawMessage(fmt.Sprintf(`"%d-%d-%d"`, w, i, j))}
				}
				res, err := qc.Push(ctx, items)
				if err != nil {
					return // the kill: unanswered, so not acknowledged
				}
				for j, r := range res {
					acked[w] = append(acked[w], ack{*r.Offset, string(items[j].Payload)})
				}
				kv, err := qc.KV(ctx, []queen.KVOp{{Op: queen.OpPut, NS: queen.Namespace, Key: "qk:w" + part, Value: json.RawMessage(strconv.Itoa(i)), Forever: true}})
				if err != nil {
					return
				}
				versions[w] = kv[0].Version
			}
		}()
	}
	time.Sleep(1500 * time.Millisecond)
	p.Kill() // SIGKILL with requests in flight
	close(stop)
	wg.Wait()

	p2 := start(t, env...)
	qc = client(t, p2.url, "")
	total := 0
	for w := range writers {
		part := strconv.Itoa(w)
		var got []queen.FetchRecord
		for off := int64(0); off < int64(len(acked[w])); {
			fr, err := qc.Fetch(ctx, queen.FetchRequest{Entries: []queen.FetchEntry{{Queue: "q", Partition: part, Offset: off}}})
			if err != nil {
				t.Fatal(err)
			}
			if len(fr[0].Records) == 0 {
				break
			}
			got = append(got, fr[0].Records...)
			off = fr[0].Records[len(fr[0].Records)-1].Offset + 1
		}
		if len(got) < len(acked[w]) {
			t.Fatalf("partition %s: %d records after kill -9, %d acknowledged", part, len(got), len(acked[w]))
		}
		for i, a := range acked[w] {
			if got[i].Offset != a.offset || string(got[i].Payload) != a.payload {
				t.Fatalf("partition %s record %d: offset %d payload %s, acknowledged %d %s", part, i, got[i].Offset, got[i].Payload, a.offset, a.payload)
			}
		}
		total += len(acked[w])
		if versions[w] == 0 {
			continue
		}
		kv, err := qc.KV(ctx, []queen.KVOp{{Op: queen.OpGet, NS: queen.Namespace, Key: "qk:w" + part}})
		if err != nil || !*kv[0].Found || kv[0].Version < versions[w] {
			t.Errorf("kv of writer %d after kill -9: %+v %v, acknowledged version %d", w, kv, err, versions[w])
		}
	}
	if total < writers*10 {
		t.Fatalf("only %d records acknowledged before the kill: no load to speak of", total)
	}
	t.Logf("%d records acknowledged before the SIGKILL, all served after it", total)
}
