package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
)

// Embedded mode (seed 000, "Embedded in the broker"): one queen-dev command
// with QUEEN_KAFKA_EMBEDDED=true spawns and supervises the facade. These
// tests run the real binaries, and fakefacade (built here) where a real
// facade cannot show a behaviour on demand.

// fakeFacade builds ./testdata/fakefacade once per run, in this module
// (the test's own directory).
var fakeFacade struct {
	once sync.Once
	bin  string
	err  error
}

func fakeFacadeBin(t testing.TB) string {
	t.Helper()
	fakeFacade.once.Do(func() {
		fakeFacade.bin = filepath.Join(binDir, "fake", "fakefacade")
		fakeFacade.err = testsupport.GoBuild("", fakeFacade.bin, "./testdata/fakefacade")
	})
	if fakeFacade.err != nil {
		t.Fatalf("%v", fakeFacade.err)
	}
	return fakeFacade.bin
}

// embedded is one queen-dev started with embedded mode on.
type embedded struct {
	*testsupport.Proc
	url   string // queen-dev's own, from its boot line
	kafka string // QUEEN_KAFKA_ADDR = QUEEN_KAFKA_ADVERTISED_ADDR
}

var boundRE = regexp.MustCompile(`queen-dev listening .* addr=(\S+)`)

// embeddedEnv is a queen-dev on port 0 with embedded mode on, a facade on a
// free loopback port, and over (a value of "" removes the variable).
func embeddedEnv(t testing.TB, over map[string]string) map[string]string {
	kafka := "127.0.0.1:" + strconv.Itoa(freePort(t))
	m := map[string]string{
		"QUEEN_URL":            "", // the supervisor injects it
		"QUEEN_DEV_ADDR":       "127.0.0.1:0",
		"QUEEN_DEV_DATA":       t.TempDir(),
		"QUEEN_KAFKA_EMBEDDED": "true",
	}
	maps.Copy(m, over)
	return facadeEnv("", kafka, m)
}

// startEmbedded starts queen-dev with env and returns once it has said
// which address it bound and that the facade started. It is killed when t
// ends (its child dies with it, by PR_SET_PDEATHSIG).
func startEmbedded(t testing.TB, env map[string]string) *embedded {
	t.Helper()
	e := launchEmbedded(t, env)
	e.waitLog(t, `msg="queen-kafka facade started (embedded)"`)
	return e
}

// launchEmbedded is startEmbedded without waiting for the facade: it
// returns once queen-dev has said which address it bound, whatever becomes
// of its child.
func launchEmbedded(t testing.TB, env map[string]string) *embedded {
	t.Helper()
	requireBin(t, queenDevBin)
	requireBin(t, queenKafkBin)
	p := &testsupport.Proc{Name: "queen-dev (embedded)", Bin: queenDevBin, Env: testsupport.EnvList(env)}
	t.Cleanup(p.Kill)
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	p.AttachLogs(t)
	line, err := p.WaitLine(boundRE.MatchString, 15*time.Second)
	if err != nil {
		t.Fatalf("%v\n%s", err, p.Out)
	}
	return &embedded{Proc: p, url: "http://" + boundRE.FindStringSubmatch(line)[1], kafka: env["QUEEN_KAFKA_ADDR"]}
}

// waitLog waits for a line of queen-dev's log that contains every part.
func (e *embedded) waitLog(t testing.TB, parts ...string) string {
	t.Helper()
	line, err := e.WaitLine(func(l string) bool {
		for _, p := range parts {
			if !strings.Contains(l, p) {
				return false
			}
		}
		return true
	}, 20*time.Second)
	if err != nil {
		t.Fatalf("queen-dev log has no line with %q: %v", parts, err)
	}
	return line
}

// kafkaStatus is the "kafka" block of GET /status.
type kafkaStatus struct {
	Mode      string  `json:"mode"`
	Phase     string  `json:"phase"`
	PID       *int    `json:"pid"`
	Restarts  int     `json:"restarts"`
	LastExit  *string `json:"lastExit"`
	UptimeMs  *int64  `json:"uptimeMs"`
	BackoffMs *int64  `json:"backoffMs"`
}

// status is GET /status, the whole body and its kafka block.
func getStatus(t testing.TB, url string) (map[string]json.RawMessage, *kafkaStatus) {
	t.Helper()
	resp, err := http.Get(url + "/status")
	if err != nil {
		t.Fatalf("GET /status: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /status: %s", resp.Status)
	}
	var body map[string]json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("GET /status: %v", err)
	}
	raw, ok := body["kafka"]
	if !ok {
		return body, nil
	}
	var k kafkaStatus
	if err := json.Unmarshal(raw, &k); err != nil {
		t.Fatalf("GET /status kafka block %s: %v", raw, err)
	}
	return body, &k
}

// awaitKafka polls /status until its kafka block satisfies cond.
func (e *embedded) awaitKafka(t testing.TB, what string, cond func(k kafkaStatus) bool) kafkaStatus {
	t.Helper()
	var k *kafkaStatus
	eventually(t, 20*time.Second, what, func() (bool, string) {
		_, k = getStatus(t, e.url)
		return k != nil && cond(*k), fmt.Sprintf("%+v", k)
	})
	return *k
}

func (e *embedded) childPID(t testing.TB) int {
	t.Helper()
	k := e.awaitKafka(t, "the child running", func(k kafkaStatus) bool { return k.Phase == "running" && k.PID != nil })
	return *k.PID
}

func waitDead(t testing.TB, pid int, what string) {
	t.Helper()
	// A child that outlives a failed test would hold its port on a shared
	// machine.
	t.Cleanup(func() {
		if testsupport.Alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	eventually(t, 15*time.Second, what, func() (bool, string) { return !testsupport.Alive(pid), "pid " + strconv.Itoa(pid) + " alive" })
}

// TestEmbeddedKcat is seed 003's "Try it" with queen-dev standing in for the
// image: one queen-dev command, the facade found beside it (no
// QUEEN_KAFKA_BIN), wired to the port queen-dev actually bound (port 0),
// and kcat producing and consuming through it.
func TestEmbeddedKcat(t *testing.T) {
	t.Parallel()
	e := startEmbedded(t, embeddedEnv(t, nil))
	boot := e.waitLog(t, `msg="queen-kafka facade started (embedded)"`)
	for _, want := range []string{
		"bin=" + queenKafkBin,
		"queen_url=" + e.url + " ",
		`queen_url_from="loopback (bound listener)"`,
	} {
		if !strings.Contains(boot, want) {
			t.Errorf("boot line %q lacks %q", boot, want)
		}
	}
	if strings.HasSuffix(e.url, ":0") {
		t.Fatalf("queen-dev reported %s, not the port it bound", e.url)
	}
	if err := testsupport.WaitTCP(e.kafka, 15*time.Second)(e.Proc); err != nil {
		t.Fatal(err)
	}

	topic := uniq("orders")
	runKcat(t, "customer-123:{\"orderId\":8891,\"total\":42}\ncustomer-456:{\"orderId\":8892,\"total\":17}\ncustomer-123:{\"orderId\":8893,\"total\":5}\n",
		"-P", "-b", e.kafka, "-t", topic, "-K:")
	out := runKcat(t, "", "-C", "-b", e.kafka, "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%k %s\n")
	got := strings.Split(strings.TrimSpace(out), "\n")
	want := map[string]bool{
		`customer-123 {"orderId":8891,"total":42}`: true,
		`customer-456 {"orderId":8892,"total":17}`: true,
		`customer-123 {"orderId":8893,"total":5}`:  true,
	}
	if len(got) != 3 {
		t.Fatalf("consumed %q, want the 3 records produced", got)
	}
	for _, l := range got {
		if !want[l] {
			t.Errorf("consumed %q, not one of the records produced", l)
		}
	}
	// Both of customer-123's orders are in one partition, in order.
	out = runKcat(t, "", "-C", "-b", e.kafka, "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%p %o %k\n")
	var parts []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasSuffix(l, " customer-123") {
			parts = append(parts, strings.TrimSuffix(l, " customer-123"))
		}
	}
	if len(parts) != 2 || parts[0][:strings.IndexByte(parts[0], ' ')] != parts[1][:strings.IndexByte(parts[1], ' ')] ||
		!strings.HasSuffix(parts[0], " 0") || !strings.HasSuffix(parts[1], " 1") {
		t.Errorf("customer-123's records at %q, want offsets 0 and 1 of one partition", parts)
	}
}

// TestEmbeddedStatus: GET /status grows the kafka block when embedded mode
// is on, and only then.
func TestEmbeddedStatus(t *testing.T) {
	t.Parallel()
	plain := startQueenDev(t, devOptions{})
	body, k := getStatus(t, plain.url)
	if k != nil || string(body["status"]) != `"ok"` || len(body) != 1 {
		t.Errorf("/status without embedded mode: %v", body)
	}

	e := startEmbedded(t, embeddedEnv(t, nil))
	st := e.awaitKafka(t, "running", func(k kafkaStatus) bool { return k.Phase == "running" })
	if st.Mode != "embedded" || st.PID == nil || !testsupport.Alive(*st.PID) || st.Restarts != 0 || st.LastExit != nil ||
		st.UptimeMs == nil || *st.UptimeMs < 0 || st.BackoffMs == nil || *st.BackoffMs != 1000 {
		t.Errorf("kafka block %+v", st)
	}
	body, _ = getStatus(t, e.url)
	for _, f := range []string{"mode", "phase", "pid", "restarts", "lastExit", "uptimeMs", "backoffMs"} {
		var block map[string]json.RawMessage
		if err := json.Unmarshal(body["kafka"], &block); err != nil {
			t.Fatal(err)
		}
		if _, ok := block[f]; !ok {
			t.Errorf("kafka block %s lacks %q", body["kafka"], f)
		}
	}
}

// TestEmbeddedRestart: kill -9 the child, it comes back after the 1 s
// backoff, restarts counts it, and the Kafka port serves again.
func TestEmbeddedRestart(t *testing.T) {
	t.Parallel()
	e := startEmbedded(t, embeddedEnv(t, nil))
	first := e.childPID(t)
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	e.waitLog(t, "queen-kafka facade exited (embedded)", `exit="signal: killed"`, "backoff=1s")
	st := e.awaitKafka(t, "restarted once", func(k kafkaStatus) bool { return k.Phase == "running" && k.Restarts == 1 })
	if st.PID == nil || *st.PID == first || st.LastExit == nil || *st.LastExit != "signal: killed" || *st.BackoffMs != 2000 {
		t.Errorf("after one kill: %+v (first pid %d)", st, first)
	}
	e.waitLog(t, `msg="queen-kafka facade started (embedded)"`, "restarts=1")
	if err := testsupport.WaitTCP(e.kafka, 15*time.Second)(e.Proc); err != nil {
		t.Fatal(err)
	}
	if out := runKcat(t, "", "-L", "-b", e.kafka); !strings.Contains(out, "1 brokers:") {
		t.Errorf("metadata after the restart:\n%s", out)
	}
	if !e.Running() {
		t.Error("queen-dev itself must keep serving when its child dies")
	}
}

// TestEmbeddedBrokerKilled: kill -9 queen-dev, and the kernel kills the
// child (PR_SET_PDEATHSIG) instead of leaving it holding the Kafka port.
func TestEmbeddedBrokerKilled(t *testing.T) {
	t.Parallel()
	e := startEmbedded(t, embeddedEnv(t, nil))
	child := e.childPID(t)
	e.Kill()
	waitDead(t, child, "the child dies with a SIGKILLed queen-dev")
}

// TestEmbeddedStop: SIGTERM to queen-dev sends SIGTERM to the child, which
// (the real facade) stops cleanly; queen-dev exits 0.
func TestEmbeddedStop(t *testing.T) {
	t.Parallel()
	e := startEmbedded(t, embeddedEnv(t, nil))
	child := e.childPID(t)
	// The clean stop is the facade's once it serves: wait for its
	// forwarded "listening" line before stopping queen-dev.
	e.waitLog(t, "stream=stderr", `msg=listening`)
	if code := e.Terminate(t, 20*time.Second); code != 0 {
		t.Errorf("queen-dev exit %d, want 0", code)
	}
	e.waitLog(t, "queen-kafka facade stopping (embedded)", "signal=SIGTERM", "grace=5s")
	e.waitLog(t, "queen-kafka facade stopped (embedded)", `exit="exit status 0"`)
	e.waitLog(t, "stream=stderr", `msg=\"shutting down\" signal=terminated`) // the facade's own line, forwarded
	if strings.Contains(e.Out.String(), "still running after the grace") {
		t.Error("a facade that stops on SIGTERM must not be SIGKILLed")
	}
	waitDead(t, child, "the child is gone when queen-dev has exited")
}

// TestEmbeddedStopGrace: a child that ignores SIGTERM gets it, then SIGKILL
// once QUEEN_KAFKA_SHUTDOWN_GRACE_MS has passed.
func TestEmbeddedStopGrace(t *testing.T) {
	t.Parallel()
	e := startEmbedded(t, embeddedEnv(t, map[string]string{
		"QUEEN_KAFKA_BIN":               fakeFacadeBin(t),
		"FAKE_FACADE_MODE":              "ignore-term",
		"QUEEN_KAFKA_SHUTDOWN_GRACE_MS": "300",
	}))
	child := e.childPID(t)
	e.waitLog(t, "line=ready")
	if code := e.Terminate(t, 20*time.Second); code != 0 {
		t.Errorf("queen-dev exit %d, want 0", code)
	}
	e.waitLog(t, "line=\"got SIGTERM\"")
	e.waitLog(t, "queen-kafka facade still running after the grace (embedded); SIGKILL", "grace=300ms")
	e.waitLog(t, "queen-kafka facade stopped (embedded)", `exit="signal: killed"`)
	waitDead(t, child, "the child ignoring SIGTERM is killed")
}

// TestEmbeddedLogBudget: 1,000 lines from the child reach queen-dev's log
// as 200 lines and one suppressed count of 800; escape sequences and control
// bytes are stripped, and a 10 KiB line is cut at 4 KiB.
func TestEmbeddedLogBudget(t *testing.T) {
	t.Parallel()
	e := startEmbedded(t, embeddedEnv(t, map[string]string{"QUEEN_KAFKA_BIN": fakeFacadeBin(t), "FAKE_FACADE_MODE": "spew"}))
	e.waitLog(t, "line=\"spew 199\"")
	// A stop forwards what is left of the child's output and reports the
	// count without waiting for the window to end.
	if code := e.Terminate(t, 20*time.Second); code != 0 {
		t.Errorf("queen-dev exit %d, want 0", code)
	}
	sup := e.waitLog(t, `msg="queen-kafka output over budget"`)
	if !strings.Contains(sup, "suppressed=800 ") || !strings.Contains(sup, "budget=200") {
		t.Errorf("suppressed line %q, want suppressed=800 of a 200 line budget", sup)
	}
	var forwarded []string
	for _, l := range strings.Split(e.Out.String(), "\n") {
		if strings.Contains(l, " msg=queen-kafka stream=") {
			forwarded = append(forwarded, l)
		}
	}
	if len(forwarded) != 200 {
		t.Fatalf("%d lines forwarded, want 200", len(forwarded))
	}
	if !strings.Contains(forwarded[0], `line="red bellnuldel"`) {
		t.Errorf("first line %q, want its escapes and control bytes stripped", forwarded[0])
	}
	if strings.Contains(e.Out.String(), `\x1b`) || strings.Contains(e.Out.String(), "\x1b") {
		t.Error("an escape sequence reached the log")
	}
	if ys := strings.Count(forwarded[1], "y"); ys != 4096 || !strings.Contains(forwarded[1], "truncated=true") {
		t.Errorf("the 10 KiB line came through as %d bytes (truncated marked: %v), want 4096", ys, strings.Contains(forwarded[1], "truncated=true"))
	}
	if !strings.Contains(forwarded[199], `line="spew 199"`) {
		t.Errorf("last forwarded line %q, want spew 199", forwarded[199])
	}
}

// TestEmbeddedChildEnv: the child's QUEEN_URL is the loopback of what
// queen-dev bound (a wildcard bind on port 0 here), the broker's secrets are
// stripped, and the rest of the environment, QUEEN_TOKEN included, arrives
// verbatim; an explicit QUEEN_URL wins.
func TestEmbeddedChildEnv(t *testing.T) {
	t.Parallel()
	e := startEmbedded(t, embeddedEnv(t, map[string]string{
		"QUEEN_DEV_ADDR":       "0.0.0.0:0",
		"QUEEN_KAFKA_BIN":      fakeFacadeBin(t),
		"FAKE_FACADE_MODE":     "env",
		"QUEEN_TOKEN":          "the-facade-token",
		"PG_PASSWORD":          "pg",
		"JWT_SECRET":           "jwt",
		"QUEEN_ENCRYPTION_KEY": "enc",
		"QUEEN_SYNC_SECRET":    "sync",
		"QUEEN_URL":            " ", // blank is unset
	}))
	port := e.url[strings.LastIndexByte(e.url, ':')+1:]
	loopback := "http://127.0.0.1:" + port
	e.waitLog(t, "queen_url="+loopback+" ", `queen_url_from="loopback (bound listener)"`)
	e.waitLog(t, `line="env QUEEN_URL=`+loopback+`"`)
	e.waitLog(t, `line="env QUEEN_TOKEN=the-facade-token"`)
	for _, secret := range []string{"PG_PASSWORD", "JWT_SECRET", "QUEEN_ENCRYPTION_KEY", "QUEEN_SYNC_SECRET"} {
		if strings.Contains(e.Out.String(), "env "+secret+"=") {
			t.Errorf("%s reached the child", secret)
		}
	}
	// The wildcard's loopback really reaches queen-dev.
	if _, k := getStatus(t, loopback); k == nil {
		t.Errorf("%s/status has no kafka block", loopback)
	}

	explicit := startEmbedded(t, embeddedEnv(t, map[string]string{
		"QUEEN_KAFKA_BIN": fakeFacadeBin(t), "FAKE_FACADE_MODE": "env", "QUEEN_URL": "http://queen-proxy:6711",
	}))
	explicit.waitLog(t, "queen_url=http://queen-proxy:6711 ", `queen_url_from="QUEEN_URL (explicit)"`)
	explicit.waitLog(t, `line="env QUEEN_URL=http://queen-proxy:6711"`)
}

// TestEmbeddedAuthWarning: with queen-dev's auth on and no credential for
// the child, queen-dev warns (every call the child makes would be 401), and
// its token table never reaches the child.
func TestEmbeddedAuthWarning(t *testing.T) {
	t.Parallel()
	const warn = "has neither QUEEN_TOKEN nor QUEEN_KAFKA_SASL=plain"
	bare := startEmbedded(t, embeddedEnv(t, map[string]string{
		"QUEEN_DEV_TOKENS": "dev-secret=tenant", "QUEEN_KAFKA_BIN": fakeFacadeBin(t), "FAKE_FACADE_MODE": "env",
	}))
	bare.waitLog(t, "level=WARN", warn, "401")
	bare.waitLog(t, `line="env QUEEN_URL=`)
	if strings.Contains(bare.Out.String(), "env QUEEN_DEV_TOKENS=") {
		t.Error("queen-dev's token table reached the child")
	}

	withToken := startEmbedded(t, embeddedEnv(t, map[string]string{
		"QUEEN_DEV_TOKENS": "dev-secret=tenant", "QUEEN_TOKEN": "dev-secret",
	}))
	if err := testsupport.WaitTCP(withToken.kafka, 15*time.Second)(withToken.Proc); err != nil {
		t.Fatal(err)
	}
	topic := uniq("authed")
	runKcat(t, "k:v\n", "-P", "-b", withToken.kafka, "-t", topic, "-K:")
	if out := runKcat(t, "", "-C", "-b", withToken.kafka, "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%k=%s\n"); strings.TrimSpace(out) != "k=v" {
		t.Errorf("consumed %q through the authenticated child", out)
	}
	if strings.Contains(withToken.Out.String(), warn) {
		t.Error("warned although the child has QUEEN_TOKEN")
	}
}

// TestEmbeddedConfigRefusalIsNotRestarted: a facade child that refuses its
// configuration at boot (here QUEEN_KAFKA_MEMORY_LIMIT) exits 78 and is left
// down: /status says phase failed with no restart, queen-dev logs why once,
// after the child's own line naming the variable, and keeps serving.
func TestEmbeddedConfigRefusalIsNotRestarted(t *testing.T) {
	t.Parallel()
	e := launchEmbedded(t, embeddedEnv(t, map[string]string{"QUEEN_KAFKA_MEMORY_LIMIT": "lots"}))
	e.waitLog(t, "QUEEN_KAFKA_MEMORY_LIMIT")
	e.waitLog(t, "queen-kafka facade refused its configuration (embedded); not restarting it", `exit="exit status 78"`)
	st := e.awaitKafka(t, "failed", func(k kafkaStatus) bool { return k.Phase == "failed" })
	time.Sleep(2500 * time.Millisecond) // past the first two backoffs
	_, k := getStatus(t, e.url)
	if k.Phase != "failed" || k.Restarts != 0 || k.PID != nil || st.LastExit == nil || *st.LastExit != "exit status 78" {
		t.Fatalf("after a configuration refusal: %+v (lastExit %v)", *k, st.LastExit)
	}
	if n := strings.Count(e.Out.String(), "refused its configuration"); n != 1 {
		t.Errorf("the refusal logged %d times, want once", n)
	}
}

// TestEmbeddedBootRefusals: the two mistakes the seed refuses at boot (a
// QUEEN_KAFKA_BIN that is not a file, embedded mode without
// QUEEN_KAFKA_ADVERTISED_ADDR) and the supervisor's own bad values are a
// non-zero exit naming the variable, before queen-dev binds; off, none of
// its variables is read.
func TestEmbeddedBootRefusals(t *testing.T) {
	t.Parallel()
	requireBin(t, queenDevBin)
	cases := []struct {
		name    string
		over    map[string]string
		mention []string
	}{
		{"bin a directory", map[string]string{"QUEEN_KAFKA_BIN": binDir}, []string{"QUEEN_KAFKA_BIN", "not a file"}},
		{"bin missing", map[string]string{"QUEEN_KAFKA_BIN": filepath.Join(binDir, "no-such-facade")}, []string{"QUEEN_KAFKA_BIN", "no-such-facade"}},
		{"advertised unset", map[string]string{"QUEEN_KAFKA_ADVERTISED_ADDR": ""}, []string{"QUEEN_KAFKA_ADVERTISED_ADDR", "QUEEN_KAFKA_EMBEDDED"}},
		{"embedded not a bool", map[string]string{"QUEEN_KAFKA_EMBEDDED": "yes"}, []string{"QUEEN_KAFKA_EMBEDDED"}},
		{"grace not a number", map[string]string{"QUEEN_KAFKA_SHUTDOWN_GRACE_MS": "5s"}, []string{"QUEEN_KAFKA_SHUTDOWN_GRACE_MS"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := embeddedEnv(t, tc.over)
			p := &testsupport.Proc{Name: "queen-dev (refused)", Bin: queenDevBin, Env: testsupport.EnvList(env)}
			t.Cleanup(p.Kill)
			if err := p.Start(); err != nil {
				t.Fatal(err)
			}
			select {
			case <-p.Done():
			case <-time.After(10 * time.Second):
				t.Fatalf("queen-dev still running: it booted on a configuration it must refuse\n%s", p.Out)
			}
			out := p.Out.String()
			if p.ExitCode() == 0 {
				t.Errorf("exit 0, want a refusal\n%s", out)
			}
			if strings.Contains(out, "queen-dev listening") {
				t.Errorf("queen-dev bound its listener before refusing\n%s", out)
			}
			for _, m := range tc.mention {
				if !strings.Contains(out, m) {
					t.Errorf("refusal does not mention %q:\n%s", m, out)
				}
			}
		})
	}

	// Off, nothing of embedded mode is read: nonsense in its variables
	// changes nothing, and no child is started.
	off := embeddedEnv(t, map[string]string{"QUEEN_KAFKA_EMBEDDED": "", "QUEEN_KAFKA_BIN": binDir, "QUEEN_KAFKA_SHUTDOWN_GRACE_MS": "soon",
		"QUEEN_KAFKA_ADVERTISED_ADDR": ""})
	p := &testsupport.Proc{Name: "queen-dev (off)", Bin: queenDevBin, Env: testsupport.EnvList(off)}
	t.Cleanup(p.Kill)
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := p.WaitLine(boundRE.MatchString, 15*time.Second)
	if err != nil {
		t.Fatalf("%v\n%s", err, p.Out)
	}
	if !strings.Contains(line, "embedded=false") {
		t.Errorf("boot line %q, want embedded=false", line)
	}
	if body, k := getStatus(t, "http://"+boundRE.FindStringSubmatch(line)[1]); k != nil {
		t.Errorf("/status with embedded mode off: %v", body)
	}
	if strings.Contains(p.Out.String(), "queen-kafka facade") {
		t.Errorf("a child was started with embedded mode off:\n%s", p.Out)
	}
}
