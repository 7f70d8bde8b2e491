package node

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/catalogue"
	"github.com/queen-mq/queen-kafka/internal/testsupport"
)

// httpGet is one GET against the operator listener: status and body.
func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// TestOperatorListener: QUEEN_KAFKA_HTTP_ADDR serves liveness, readiness,
// the node's metrics in the Prometheus text format and pprof, from the
// moment the Kafka listener is bound until Shutdown closes it.
func TestOperatorListener(t *testing.T) {
	n, _ := newTestNode(t, map[string]string{"QUEEN_KAFKA_HTTP_ADDR": "127.0.0.1:0"})
	require.Nil(t, n.HTTPAddr(), "nothing bound before Listen")
	_, stop := serveStoppable(t, n)
	base := "http://" + n.HTTPAddr().String()

	code, body := httpGet(t, base+"/healthz")
	require.Equal(t, 200, code)
	require.Equal(t, "ok\n", body)

	code, body = httpGet(t, base+"/readyz")
	require.Equal(t, 200, code, body)
	for _, want := range []string{"[+]listener: kafka listener on 127.0.0.1:", "[+]cluster: single mode", "[+]queen", "ready\n"} {
		require.Contains(t, body, want)
	}

	code, body = httpGet(t, base+"/metrics")
	require.Equal(t, 200, code)
	s, err := testsupport.ParseScrape(strings.NewReader(body))
	require.NoError(t, err)
	for _, name := range []string{"queen_kafka_build_info", "queen_kafka_open_connections", "queen_kafka_decode_budget_limit_bytes", "go_goroutines", "process_cpu_seconds_total"} {
		_, ok := s.Sum(name)
		require.True(t, ok, "%s missing from /metrics", name)
	}
	_, ok := s.Sum("queen_kafka_cluster_live_nodes")
	require.False(t, ok, "cluster series in single mode")

	code, body = httpGet(t, base+"/debug/pprof/")
	require.Equal(t, 200, code)
	require.Contains(t, body, "goroutine")
	code, _ = httpGet(t, base+"/debug/pprof/heap?debug=1")
	require.Equal(t, 200, code)

	stop()
	require.False(t, n.Ready(context.Background())[0].OK, "a stopped node is not ready")
	_, err = http.Get(base + "/healthz")
	require.Error(t, err, "Shutdown closed the operator listener")
}

// TestOperatorListenerBindFailure: a QUEEN_KAFKA_HTTP_ADDR that cannot be
// bound fails Listen naming the variable, and leaves no Kafka listener.
func TestOperatorListenerBindFailure(t *testing.T) {
	n, _ := newTestNode(t, map[string]string{"QUEEN_KAFKA_HTTP_ADDR": "127.0.0.1:0"})
	_, stop := serveStoppable(t, n)
	t.Cleanup(stop)
	taken := n.HTTPAddr().String()

	m, _ := newTestNode(t, map[string]string{"QUEEN_KAFKA_HTTP_ADDR": taken})
	_, err := m.Listen()
	require.ErrorContains(t, err, "QUEEN_KAFKA_HTTP_ADDR="+taken)
	bound, _ := m.srv.Bound()
	require.Empty(t, bound)
}

// TestReadyzFollowsQueenInSingleMode: a call that fails for want of Queen
// makes the node not ready; once Queen answers again, /readyz finds out by
// asking it (a not-ready node gets no traffic to learn from).
func TestReadyzFollowsQueenInSingleMode(t *testing.T) {
	n, fq := newTestNode(t, map[string]string{"QUEEN_KAFKA_HTTP_ADDR": "127.0.0.1:0"})
	addr := serveTestNode(t, n)
	readyz := "http://" + n.HTTPAddr().String() + "/readyz"

	// Queen refusing (a 401) is Queen answering: still ready.
	fq.setFault(func(*http.Request) (int, string, string) { return 401, "", "no" })
	k := dial(t, addr)
	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 7
	k.roundTrip(meta)
	code, body := httpGet(t, readyz)
	require.Equal(t, 200, code, body)

	fq.setFault(func(*http.Request) (int, string, string) { return 503, "", "down" })
	time.Sleep(catalogue.RefreshBackoffMin) // the refused listing's backoff runs out
	k.roundTrip(meta)
	code, body = httpGet(t, readyz)
	require.Equal(t, 503, code, body)
	require.Contains(t, body, "[-]queen: ")
	require.Contains(t, body, "failed (transient)", "the failed call, or the probe that found Queen still failing")
	require.Contains(t, body, "[+]listener")

	fq.setFault(nil)
	probes := fq.count("POST /api/v1/kv")
	testsupport.WaitFor(t, 10*time.Second, "ready once Queen answers the probe", func() bool {
		code, _ := httpGet(t, readyz)
		return code == 200
	})
	require.Greater(t, fq.count("POST /api/v1/kv"), probes, "readiness asked Queen itself")
}

// TestReadyzWaitsForQueenAtBoot: a node is not ready before a call to
// Queen has been answered since boot: with QUEEN_URL unreachable /readyz
// fails from the first ask (the probe finds Queen out); with Queen failing
// from boot it fails until Queen answers, then it is ready.
func TestReadyzWaitsForQueenAtBoot(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())
	n := newNodeOn(t, dead, map[string]string{"QUEEN_KAFKA_HTTP_ADDR": "127.0.0.1:0"})
	serveTestNode(t, n)
	code, body := httpGet(t, "http://"+n.HTTPAddr().String()+"/readyz")
	require.Equal(t, 503, code, body)
	require.Contains(t, body, "[-]queen: ")
	require.Contains(t, body, "[+]listener")

	fq, url := newDevQueen(t)
	fq.setFault(func(*http.Request) (int, string, string) { return 503, "", "down" })
	m := newNodeOn(t, url, map[string]string{"QUEEN_KAFKA_HTTP_ADDR": "127.0.0.1:0"})
	serveTestNode(t, m)
	readyz := "http://" + m.HTTPAddr().String() + "/readyz"
	code, body = httpGet(t, readyz)
	require.Equal(t, 503, code, body)
	require.Contains(t, body, "[-]queen: ")
	fq.setFault(nil)
	testsupport.WaitFor(t, 10*time.Second, "ready once Queen answers the probe", func() bool {
		code, _ := httpGet(t, readyz)
		return code == 200
	})
}

// TestReadinessProbeUsesContractOps: the probe /readyz sends to Queen is
// one of the contract's four KV ops (§10: put, delete, getMany,
// getPrefix), in namespace queen-kafka, on a qk: key.
func TestReadinessProbeUsesContractOps(t *testing.T) {
	n, fq := newTestNode(t, map[string]string{"QUEEN_KAFKA_HTTP_ADDR": "127.0.0.1:0"})
	serveTestNode(t, n)
	fq.setFault(func(*http.Request) (int, string, string) { return 503, "", "down" })
	code, body := httpGet(t, "http://"+n.HTTPAddr().String()+"/readyz")
	require.Equal(t, 503, code, body)
	require.Positive(t, fq.count("POST /api/v1/kv"), "readiness asked Queen")
	for _, b := range fq.rec.Bodies("POST /api/v1/kv") {
		ops, _ := b["operations"].([]any)
		require.NotEmpty(t, ops, "%v", b)
		for _, o := range ops {
			op := o.(map[string]any)
			require.Contains(t, []string{"put", "delete", "getMany", "getPrefix"}, op["op"], "%v", op)
			require.Equal(t, "queen-kafka", op["ns"])
			keys, _ := op["keys"].([]any)
			if k, ok := op["key"]; ok {
				keys = append(keys, k)
			}
			if p, ok := op["prefix"]; ok {
				keys = append(keys, p)
			}
			for _, k := range keys {
				require.True(t, strings.HasPrefix(k.(string), "qk:"), "%v", op)
			}
		}
	}
}

// TestConnectionMetrics: accepted and refused connections, open ones, and
// the frame bytes each way, as a scrape reads them.
func TestConnectionMetrics(t *testing.T) {
	n, _ := newTestNode(t, nil) // QUEEN_KAFKA_MAX_CONNECTIONS=16
	addr := serveTestNode(t, n)
	req := kmsg.NewPtrApiVersionsRequest()
	var conns []*kclient
	for range 16 {
		k := dial(t, addr)
		k.roundTrip(req)
		conns = append(conns, k)
	}
	dial(t, addr).expectClosed()
	gather := func() testsupport.Scrape {
		fams, err := n.metrics.Gatherer().Gather()
		require.NoError(t, err)
		return testsupport.ScrapeFamilies(fams)
	}
	s := gather()
	get := func(name string, labels ...string) float64 {
		v, ok := s.Sum(name, labels...)
		require.True(t, ok, name)
		return v
	}
	require.Equal(t, 16.0, get("queen_kafka_connections_accepted_total"))
	require.Equal(t, 1.0, get("queen_kafka_connections_refused_total", "reason", "max_connections"))
	require.Equal(t, 16.0, get("queen_kafka_open_connections"))
	require.Equal(t, 16.0, get("queen_kafka_requests_total", "api", "ApiVersions", "error", "NONE"))
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("test")).AppendRequest(nil, req, 1)
	require.Equal(t, float64(16*len(frame)), get("queen_kafka_request_bytes_total"), "each request's frame, size prefix included")
	require.Greater(t, get("queen_kafka_response_bytes_total"), 16.0*4)
	for _, k := range conns {
		k.nc.Close()
	}
	testsupport.WaitFor(t, 10*time.Second, "the connections forgotten", func() bool {
		s = gather()
		return get("queen_kafka_open_connections") == 0
	})
}
