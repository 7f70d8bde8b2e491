package metrics

import (
	"net/http"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen"
)

const ns = "queen_kafka"

// Bounds of the label children resolved once: API keys and versions beyond
// them (none are offered today) are resolved on every use instead.
const (
	maxKey     = 127
	maxVersion = 31
)

// latencyBuckets span a cached Metadata answer (sub-millisecond) to a long
// poll (30 s) and a JoinGroup waiting out a rebalance.
var latencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// lagBuckets are records behind the high watermark, by decades.
var lagBuckets = []float64{0, 1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7}

// Metrics is one node's collectors and registry.
type Metrics struct {
	reg *prometheus.Registry

	requests     *prometheus.CounterVec   // api, version, error
	latency      *prometheus.HistogramVec // api
	reqBytes     prometheus.Counter
	respBytes    prometheus.Counter
	throttled    *prometheus.CounterVec // api
	throttleSecs *prometheus.CounterVec // api
	accepted     prometheus.Counter
	refused      *prometheus.CounterVec // reason
	prodRecords  prometheus.Counter
	prodBatches  prometheus.Counter
	fetchRecords prometheus.Counter
	fetchBytes   prometheus.Counter
	fetchLag     prometheus.Histogram
	committed    prometheus.Counter
	queenCalls   *prometheus.CounterVec   // route, outcome
	queenLatency *prometheus.HistogramVec // route

	share *share // KIP-932's data path

	keys [maxKey + 1]keyChildren
}

// keyChildren are one API's children, resolved on first use: its answers
// without error at each version, its latency, its throttles.
type keyChildren struct {
	ok        [maxVersion + 1]atomic.Pointer[prometheus.Counter]
	latency   atomic.Pointer[prometheus.Observer]
	throttled atomic.Pointer[prometheus.Counter]
	throttleS atomic.Pointer[prometheus.Counter]
}

// New builds a node's metrics over its own registry, with the Go runtime's
// and the process's collectors, queen_kafka_build_info{version}, and the
// state snapshot read at every scrape (nil: none).
func New(version string, snapshot func() Snapshot) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: name, Help: help})
	}
	counterVec := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: name, Help: help}, labels)
	}
	m.requests = counterVec("requests_total", "Kafka requests answered, by API, version and the first error code of the answer (NONE: no error). acks=0 produce requests count though no frame is sent.", "api", "version", "error")
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "request_duration_seconds",
		Help: "Time from a request's dispatch to its answer being ready, by API (a coalesced produce request: its group's time).", Buckets: latencyBuckets}, []string{"api"})
	m.reqBytes = counter("request_bytes_total", "Bytes of Kafka request frames answered, size prefix included.")
	m.respBytes = counter("response_bytes_total", "Bytes of Kafka response frames written, size prefix included.")
	m.throttled = counterVec("throttled_responses_total", "Answers carrying a throttle_time_ms above zero (Queen answered 429 or 503 with Retry-After), by API.", "api")
	m.throttleSecs = counterVec("throttle_seconds_total", "Sum of the throttle times answered, by API.", "api")
	m.accepted = counter("connections_accepted_total", "Kafka connections accepted.")
	m.refused = counterVec("connections_refused_total", "Kafka connections closed at accept, by reason: max_connections (QUEEN_KAFKA_MAX_CONNECTIONS reached) or draining (shutting down).", "reason")
	m.prodRecords = counter("produce_records_total", "Records stored in Queen by Produce (a repeated idempotent batch, answered from its first write, is not counted again).")
	m.prodBatches = counter("produce_batches_total", "Record batches stored in Queen by Produce.")
	m.fetchRecords = counter("fetch_records_total", "Records returned to consumers by Fetch.")
	m.fetchBytes = counter("fetch_bytes_total", "Record batch bytes returned to consumers by Fetch.")
	m.fetchLag = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "fetch_lag_records",
		Help: "Per partition fetched without error: records between the consumer's next offset after the fetch and the high watermark.", Buckets: lagBuckets})
	m.committed = counter("committed_offsets_total", "Partition offsets committed by OffsetCommit (partitions answered without error).")
	m.queenCalls = counterVec("queen_calls_total", "HTTP calls to Queen, by route and outcome (ok, or the failure: throttled, transient, server, transport, timeout, unauthorized, forbidden, bad_request, too_large, protocol, canceled).", "route", "outcome")
	m.queenLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "queen_call_duration_seconds",
		Help: "Duration of HTTP calls to Queen, request sent to body decoded, by route (a fetch includes its long poll).", Buckets: latencyBuckets}, []string{"route"})
	info := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "build_info", Help: "Always 1; the build's version and Go version as labels.",
		ConstLabels: prometheus.Labels{"version": version, "goversion": runtime.Version()}})
	info.Set(1)

	m.reg.MustRegister(m.requests, m.latency, m.reqBytes, m.respBytes, m.throttled, m.throttleSecs, m.accepted, m.refused,
		m.prodRecords, m.prodBatches, m.fetchRecords, m.fetchBytes, m.fetchLag, m.committed, m.queenCalls, m.queenLatency, info,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, reason := range []string{"max_connections", "draining"} {
		m.refused.WithLabelValues(reason) // known reasons are series from the start, so rate() sees the first
	}
	m.share = newShare(m.reg)
	if snapshot != nil {
		m.reg.MustRegister(newStateCollector(snapshot))
	}
	return m
}

// Gatherer is the node's registry, for /metrics and for tests.
func (m *Metrics) Gatherer() prometheus.Gatherer { return m.reg }

// Handler serves the registry in the Prometheus text format (or
// OpenMetrics when asked).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, EnableOpenMetrics: true})
}

// apiNames are the api label's values: the Kafka name of each key.
var apiNames = func() (names [maxKey + 1]string) {
	for k := range names {
		names[k] = kmsg.NameForKey(int16(k))
	}
	return names
}()

func apiName(key int16) string {
	if key >= 0 && int(key) <= maxKey {
		return apiNames[key]
	}
	return kmsg.NameForKey(key)
}

// errorName is the error label's value: the Kafka name of code.
func errorName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok && e.Code == code {
		return e.Message
	}
	return strconv.Itoa(int(code))
}

// resolved returns *slot, filling it from mk on first use (two racing
// callers resolve the same child).
func resolved[T any](slot *atomic.Pointer[T], mk func() T) T {
	if p := slot.Load(); p != nil {
		return *p
	}
	v := mk()
	slot.Store(&v)
	return v
}

func (m *Metrics) children(key int16) *keyChildren {
	if key >= 0 && int(key) <= maxKey {
		return &m.keys[key]
	}
	return nil
}

// Request is one request answered (transport.Observer).
func (m *Metrics) Request(key, version, code int16, bytes int, throttle, took time.Duration) {
	api := apiName(key)
	kc := m.children(key)
	switch {
	case kc != nil && code == 0 && version >= 0 && version <= maxVersion:
		resolved(&kc.ok[version], func() prometheus.Counter {
			return m.requests.WithLabelValues(api, strconv.Itoa(int(version)), "NONE")
		}).Inc()
	default:
		m.requests.WithLabelValues(api, strconv.Itoa(int(version)), errorName(code)).Inc()
	}
	if kc == nil {
		m.latency.WithLabelValues(api).Observe(took.Seconds())
	} else {
		resolved(&kc.latency, func() prometheus.Observer { return m.latency.WithLabelValues(api) }).Observe(took.Seconds())
	}
	m.reqBytes.Add(float64(bytes))
	if throttle > 0 {
		if kc == nil {
			m.throttled.WithLabelValues(api).Inc()
			m.throttleSecs.WithLabelValues(api).Add(throttle.Seconds())
			return
		}
		resolved(&kc.throttled, func() prometheus.Counter { return m.throttled.WithLabelValues(api) }).Inc()
		resolved(&kc.throttleS, func() prometheus.Counter { return m.throttleSecs.WithLabelValues(api) }).Add(throttle.Seconds())
	}
}

// Sent is one response frame written (transport.Observer).
func (m *Metrics) Sent(bytes int) { m.respBytes.Add(float64(bytes)) }

// Accepted is one connection accepted (transport.Observer).
func (m *Metrics) Accepted() { m.accepted.Inc() }

// Refused is one connection closed at accept (transport.Observer).
func (m *Metrics) Refused(reason string) { m.refused.WithLabelValues(reason).Inc() }

// Produced is what one produce group stored (node.Observer).
func (m *Metrics) Produced(records, batches int) {
	m.prodRecords.Add(float64(records))
	m.prodBatches.Add(float64(batches))
}

// Fetched is what one fetch answer returned (node.Observer).
func (m *Metrics) Fetched(records, bytes int) {
	m.fetchRecords.Add(float64(records))
	m.fetchBytes.Add(float64(bytes))
}

// FetchLag is one partition's lag after a fetch (node.Observer).
func (m *Metrics) FetchLag(records int64) { m.fetchLag.Observe(float64(records)) }

// Committed is the offsets one OffsetCommit wrote (node.Observer).
func (m *Metrics) Committed(offsets int) { m.committed.Add(float64(offsets)) }

// QueenCall is one HTTP call to Queen (queen.Observer). Routes and kinds
// are a few constants each; their children are looked up per call, which
// costs nothing beside an HTTP exchange.
func (m *Metrics) QueenCall(route string, outcome queen.Kind, d time.Duration) {
	name := "ok"
	if outcome != queen.KindNone {
		name = outcome.String()
	}
	m.queenCalls.WithLabelValues(route, name).Inc()
	m.queenLatency.WithLabelValues(route).Observe(d.Seconds())
}
