package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/config"
	"github.com/queen-mq/queen-kafka/internal/testsupport"
	"github.com/queen-mq/queen-kafka/queen"
)

// opsGet is one GET against a facade's operator listener.
func opsGet(t testing.TB, url string) (int, string) {
	t.Helper()
	resp, err := httpc.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// scrape reads and parses a facade's /metrics with the Prometheus text
// parser.
func scrape(t testing.TB, base string) testsupport.Scrape {
	t.Helper()
	code, body := opsGet(t, base+"/metrics")
	if code != 200 {
		t.Fatalf("GET /metrics: %d %s", code, body)
	}
	s, err := testsupport.ParseScrape(strings.NewReader(body))
	if err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	return s
}

// metric is the sum of name's samples under labels, failing t when none.
func metric(t testing.TB, s testsupport.Scrape, name string, labels ...string) float64 {
	t.Helper()
	v, ok := s.Sum(name, labels...)
	if !ok {
		t.Fatalf("%s%v is not in the scrape", name, labels)
	}
	return v
}

// TestMetricsAfterKnownWorkload: after N records produced in known
// batches, M fetched, one throttled produce (queen-dev's fault injection),
// two offsets committed and one rebalance, the scraped counters are exactly
// that, and the page parses as Prometheus text.
func TestMetricsAfterKnownWorkload(t *testing.T) {
	t.Parallel()
	dev := startQueenDev(t, devOptions{faults: true})
	token := uniq("metrics-token")
	ops := "127.0.0.1:" + strconv.Itoa(freePort(t))
	fac := startFacade(t, dev, map[string]string{"QUEEN_TOKEN": token, "QUEEN_KAFKA_HTTP_ADDR": ops})
	base := "http://" + ops
	tg := target{bootstrap: []string{fac.addr}, dev: dev}
	ctx := ctxT(t, 2*time.Minute)
	topic, empty, group := uniq("metrics"), uniq("metrics-empty"), uniq("metrics-group")
	createTopic(t, tg, topic, 2, nil)
	createTopic(t, tg, empty, 1, nil)
	br := newKgo(t, tg.bootstrap).SeedBrokers()[0]

	// N = 20 records in 4 batches of 5, one request each, answered in turn.
	const batches, per = 4, 5
	for i := range batches {
		vals := make([]string, per)
		for j := range vals {
			vals[j] = fmt.Sprintf("v%d-%d", i, j)
		}
		raw, err := br.Request(ctx, produceRaw(topic, 0, 10000, rawBatch(-1, -1, -1, vals...)))
		if err != nil || raw.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("produce %d: %v %+v", i, err, raw)
		}
	}
	// One produce throttled by Queen: a 429 with Retry-After 1, once.
	dev.fault(t, map[string]any{"rules": []faultRule{{Route: "push", Token: token, Status: 429, RetryAfter: secs(1), Count: 1}}})
	raw, err := br.Request(ctx, produceRaw(topic, 0, 10000, rawBatch(-1, -1, -1, "throttled")))
	dev.clearFaults(t)
	if err != nil || raw.(*kmsg.ProduceResponse).ThrottleMillis != 1000 {
		t.Fatalf("throttled produce: %v %+v", err, raw)
	}
	// M = 10 records fetched: offsets 10 to 19 of 20.
	raw, err = br.Request(ctx, fetchP0(topic, 6, 10))
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	fp := raw.(*kmsg.FetchResponse).Topics[0].Partitions[0]
	if fp.ErrorCode != 0 || fp.HighWatermark != batches*per {
		t.Fatalf("fetch: %+v", fp)
	}
	// Two offsets committed, one request each.
	for p := range int32(2) {
		raw, err := br.Request(ctx, commitReq(group+"-assigned", topic, p, 10))
		if err != nil || raw.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("commit %d: %v %+v", p, err, raw)
		}
	}
	// One rebalance: a group consumer of an empty topic joins, is assigned
	// its partition, and leaves.
	var assigned atomic.Bool
	consumer := newKgo(t, tg.bootstrap, kgo.ConsumerGroup(group), kgo.ConsumeTopics(empty), kgo.DisableAutoCommit(),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) { assigned.Store(true) }))
	eventually(t, 30*time.Second, "the group consumer assigned", func() (bool, string) {
		fctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		consumer.PollFetches(fctx)
		cancel()
		return assigned.Load(), "not yet"
	})
	consumer.Close()

	s := scrape(t, base)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"queen_kafka_produce_records_total", nil, batches * per},
		{"queen_kafka_produce_batches_total", nil, batches},
		{"queen_kafka_requests_total", []string{"api", "Produce", "error", "NONE"}, batches},
		{"queen_kafka_requests_total", []string{"api", "Produce", "error", "REQUEST_TIMED_OUT"}, 1},
		{"queen_kafka_request_duration_seconds_count", []string{"api", "Produce"}, batches + 1},
		{"queen_kafka_throttled_responses_total", []string{"api", "Produce"}, 1},
		{"queen_kafka_throttle_seconds_total", []string{"api", "Produce"}, 1},
		{"queen_kafka_queen_calls_total", []string{"route", "POST /api/v1/push", "outcome", "ok"}, batches},
		{"queen_kafka_queen_calls_total", []string{"route", "POST /api/v1/push", "outcome", "throttled"}, 1},
		{"queen_kafka_queen_call_duration_seconds_count", []string{"route", "POST /api/v1/push"}, batches + 1},
		{"queen_kafka_fetch_records_total", nil, 10},
		{"queen_kafka_fetch_bytes_total", nil, float64(len(fp.RecordBatches))},
		{"queen_kafka_fetch_lag_records_sum", nil, 0},
		{"queen_kafka_committed_offsets_total", nil, 2},
		{"queen_kafka_rebalances_total", nil, 1},
		{"queen_kafka_requests_total", []string{"api", "SyncGroup", "error", "NONE"}, 1},
		{"queen_kafka_group_members", nil, 0},
		{"queen_kafka_build_info", []string{"version", "dev"}, 1},
	} {
		if got := metric(t, s, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	for _, name := range []string{"queen_kafka_request_bytes_total", "queen_kafka_response_bytes_total", "queen_kafka_connections_accepted_total", "queen_kafka_fetch_lag_records_count"} {
		if metric(t, s, name) <= 0 {
			t.Errorf("%s is 0 after a workload", name)
		}
	}
	if _, ok := s.Sum("queen_kafka_cluster_live_nodes"); ok {
		t.Error("cluster series from a single-mode facade")
	}
}

// TestReadyzWhileWaitingOutAPredecessor: a cluster node restarted over its
// predecessor's live registry row serves /healthz but is not ready while it
// waits the row out, and is ready once the id is claimed.
func TestReadyzWhileWaitingOutAPredecessor(t *testing.T) {
	t.Parallel()
	ops := "127.0.0.1:" + strconv.Itoa(freePort(t))
	// A long TTL, so the wait is seconds long: the not-ready answer is read
	// well inside it.
	c := newTestCluster(t, clusterOpts{nodes: 1, env: map[string]string{
		"QUEEN_KAFKA_HTTP_ADDR": ops, "QUEEN_KAFKA_CLUSTER_TTL_MS": "15000", "QUEEN_KAFKA_CLUSTER_HEARTBEAT_MS": "1000",
	}})
	base := "http://" + ops
	n := c.node(1)
	eventually(t, 10*time.Second, "node 1 ready", func() (bool, string) {
		code, body := opsGet(t, base+"/readyz")
		return code == 200, body
	})

	n.kill() // its row stays live for up to a TTL
	off := n.Out.Len()
	if err := n.restart(); err != nil {
		t.Fatalf("restart: %v", err)
	}
	logLine(t, n, off, 10*time.Second, "node id is held by an existing registry row")
	code, body := opsGet(t, base+"/readyz")
	if code != 503 || !strings.Contains(body, "[-]cluster: claiming node id 1") || !strings.Contains(body, "[+]listener") {
		t.Errorf("/readyz while waiting out the predecessor: %d\n%s", code, body)
	}
	if code, _ := opsGet(t, base+"/healthz"); code != 200 {
		t.Errorf("/healthz while waiting: %d", code)
	}
	s := scrape(t, base)
	if metric(t, s, "queen_kafka_cluster_joined") != 0 {
		t.Error("cluster_joined is 1 before the claim")
	}

	logLine(t, n, off, 30*time.Second, "node id claimed")
	eventually(t, 10*time.Second, "node 1 ready after the claim", func() (bool, string) {
		code, body := opsGet(t, base+"/readyz")
		return code == 200, body
	})
	s = scrape(t, base)
	if metric(t, s, "queen_kafka_cluster_joined") != 1 || metric(t, s, "queen_kafka_cluster_live_nodes") != 1 || metric(t, s, "queen_kafka_cluster_healthy") != 1 {
		t.Errorf("cluster series after the claim: joined %v live %v healthy %v", metric(t, s, "queen_kafka_cluster_joined"),
			metric(t, s, "queen_kafka_cluster_live_nodes"), metric(t, s, "queen_kafka_cluster_healthy"))
	}
	if metric(t, s, "queen_kafka_cluster_heartbeats_total", "outcome", "ok") < 1 {
		t.Error("no successful heartbeat counted")
	}
}

// TestHelp: --help is the configuration's own definition, every variable
// with its default, range and meaning, on stdout with exit 0; any other
// argument is refused.
func TestHelp(t *testing.T) {
	t.Parallel()
	requireBin(t, queenKafkBin)
	var want bytes.Buffer
	if err := config.WriteFacadeHelp(&want, "queen-kafka"); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(queenKafkBin, "--help").Output()
	if err != nil {
		t.Fatalf("--help: %v", err)
	}
	if string(out) != want.String() {
		t.Errorf("--help printed\n%s\nwant\n%s", out, want.String())
	}
	for _, v := range config.Variables(config.FacadeMode) {
		if !strings.Contains(string(out), "  "+v.Name+"\n") {
			t.Errorf("--help lacks %s", v.Name)
		}
	}
	cmd := exec.Command(queenKafkBin, "--bogus")
	b, err := cmd.CombinedOutput()
	if err == nil || cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(b), "--help") {
		t.Errorf("an unknown argument: %v %q, want exit 2 pointing at --help", err, b)
	}
}

// TestVersion: a binary built the Makefile's way carries the version it
// was given in --version, the boot line and its registry row.
func TestVersion(t *testing.T) {
	t.Parallel()
	requireBin(t, queenKafkBin)
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^LDFLAGS\s*:?=\s*(-X \S+)=\$\(VERSION\)\s*$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("the Makefile has no LDFLAGS line setting the version from $(VERSION)")
	}
	const want = "v9.8.7-e2e"
	bin := filepath.Join(t.TempDir(), "queen-kafka")
	build := exec.Command("go", "build", "-ldflags", string(m[1])+"="+want, "-o", bin, "./cmd/queen-kafka")
	build.Dir = root
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil || string(out) != "queen-kafka "+want+"\n" {
		t.Fatalf("--version: %q %v", out, err)
	}

	dev := startQueenDev(t, devOptions{})
	f := newFacade(dev.url, freePort(t), nodeEnv(1, uniq("version"), nil))
	f.Bin = bin
	t.Cleanup(f.kill)
	if err := f.start(); err != nil {
		t.Fatalf("%v\n%s", err, f.Out.From(0))
	}
	f.attachLogs(t)
	logLine(t, f, 0, 10*time.Second, "queen-kafka starting", "version="+want)
	logLine(t, f, 0, 10*time.Second, "node id claimed")
	var res struct {
		Results []queen.KVResult `json:"results"`
	}
	if code := dev.post(t, "/api/v1/kv", queen.KVRequest{Operations: []queen.KVOp{{Op: queen.OpGet, NS: queen.Namespace, Key: queen.NodeKey("queen", 1)}}}, &res); code != 200 || len(res.Results) != 1 {
		t.Fatalf("reading the registry row: %d %+v", code, res)
	}
	var row struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(res.Results[0].Value, &row); err != nil || row.Version != want {
		t.Errorf("registry row %s: version %q, want %q (%v)", res.Results[0].Value, row.Version, want, err)
	}
}
