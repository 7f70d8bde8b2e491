package metrics

import (
	"bytes"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
	"github.com/queen-mq/queen-kafka/queen"
)

func scrape(t *testing.T, m *Metrics) testsupport.Scrape {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	require.Equal(t, 200, rec.Code)
	s, err := testsupport.ParseScrape(bytes.NewReader(rec.Body.Bytes()))
	require.NoError(t, err)
	return s
}

func value(t *testing.T, s testsupport.Scrape, name string, labels ...string) float64 {
	t.Helper()
	v, ok := s.Sum(name, labels...)
	require.True(t, ok, "%s%v not in the scrape", name, labels)
	return v
}

// TestEventsBecomeSeries: each event lands in its series under its
// labels, the pre-resolved children and the ones resolved per use alike,
// and the page parses as Prometheus text.
func TestEventsBecomeSeries(t *testing.T) {
	m := New("v1.2.3", nil)
	produce, fetch := kmsg.Produce.Int16(), kmsg.Fetch.Int16()
	m.Request(produce, 9, 0, 100, 0, 2*time.Millisecond)
	m.Request(produce, 9, 0, 100, 0, 3*time.Millisecond)
	m.Request(produce, 7, kerr.RequestTimedOut.Code, 50, 1500*time.Millisecond, time.Millisecond)
	m.Request(fetch, 6, 0, 80, 0, 500*time.Millisecond)
	m.Request(900, 0, 999, 10, 0, time.Millisecond) // a key and a code beyond the tables
	m.Sent(64)
	m.Accepted()
	m.Refused("max_connections")
	m.Produced(7, 2)
	m.Fetched(5, 400)
	m.FetchLag(12)
	m.Committed(3)
	m.QueenCall("POST /api/v1/push", queen.KindNone, 4*time.Millisecond)
	m.QueenCall("POST /api/v1/push", queen.KindThrottled, time.Millisecond)

	s := scrape(t, m)
	require.Equal(t, 2.0, value(t, s, "queen_kafka_requests_total", "api", "Produce", "version", "9", "error", "NONE"))
	require.Equal(t, 1.0, value(t, s, "queen_kafka_requests_total", "api", "Produce", "version", "7", "error", "REQUEST_TIMED_OUT"))
	require.Equal(t, 1.0, value(t, s, "queen_kafka_requests_total", "api", "Unknown", "error", "999"))
	require.Equal(t, 3.0, value(t, s, "queen_kafka_request_duration_seconds_count", "api", "Produce"))
	require.InDelta(t, 0.006, value(t, s, "queen_kafka_request_duration_seconds_sum", "api", "Produce"), 1e-9)
	require.Equal(t, 1.0, value(t, s, "queen_kafka_request_duration_seconds_count", "api", "Fetch"))
	require.Equal(t, 340.0, value(t, s, "queen_kafka_request_bytes_total"))
	require.Equal(t, 64.0, value(t, s, "queen_kafka_response_bytes_total"))
	require.Equal(t, 1.0, value(t, s, "queen_kafka_throttled_responses_total", "api", "Produce"))
	require.Equal(t, 1.5, value(t, s, "queen_kafka_throttle_seconds_total", "api", "Produce"))
	require.Equal(t, 1.0, value(t, s, "queen_kafka_connections_accepted_total"))
	require.Equal(t, 1.0, value(t, s, "queen_kafka_connections_refused_total", "reason", "max_connections"))
	require.Equal(t, 0.0, value(t, s, "queen_kafka_connections_refused_total", "reason", "draining"), "known reasons start at zero")
	require.Equal(t, 7.0, value(t, s, "queen_kafka_produce_records_total"))
	require.Equal(t, 2.0, value(t, s, "queen_kafka_produce_batches_total"))
	require.Equal(t, 5.0, value(t, s, "queen_kafka_fetch_records_total"))
	require.Equal(t, 400.0, value(t, s, "queen_kafka_fetch_bytes_total"))
	require.Equal(t, 12.0, value(t, s, "queen_kafka_fetch_lag_records_sum"))
	require.Equal(t, 3.0, value(t, s, "queen_kafka_committed_offsets_total"))
	require.Equal(t, 1.0, value(t, s, "queen_kafka_queen_calls_total", "route", "POST /api/v1/push", "outcome", "ok"))
	require.Equal(t, 1.0, value(t, s, "queen_kafka_queen_calls_total", "route", "POST /api/v1/push", "outcome", "throttled"))
	require.Equal(t, 2.0, value(t, s, "queen_kafka_queen_call_duration_seconds_count", "route", "POST /api/v1/push"))
	require.Equal(t, 1.0, value(t, s, "queen_kafka_build_info", "version", "v1.2.3"))
	_, ok := s.Sum("go_goroutines")
	require.True(t, ok, "the Go runtime's collector")
}

// TestSnapshotAtScrape: the state is read at each scrape, and the cluster
// series exist only in cluster mode.
func TestSnapshotAtScrape(t *testing.T) {
	snap := Snapshot{
		OpenConnections: 3,
		Groups:          []GroupState{{State: "Stable", Groups: 2, Members: 5}, {State: "Empty", Groups: 1}},
		Rebalances:      4, Producers: 6, SequenceWindows: 9, ProducerEvictions: 1, WindowEvictions: 2, ProducerIDsHeld: 1500,
		TxnOpen: 1, TxnCommitted: 7, TxnAborted: 2, DecodeBudget: Budget{InUse: 100, Size: 1000}, FrameBudget: Budget{InUse: 10, Size: 50},
		FetchBudget: Budget{InUse: 20, Size: 60}, AnswerBudget: Budget{InUse: 30, Size: 70},
		ConsumerGroups: ConsumerGroups{States: []GroupState{{State: "Reconciling", Groups: 1, Members: 6}}, Rebalances: 9, MaxEpoch: 12, Assignments: 8, AssignTime: 1500 * time.Millisecond},
		FetchSessions:  FetchSessions{Sessions: 2, Partitions: 30, Evictions: 5, Full: 3, Incremental: 40, Sessionless: 8, NotFound: 1, InvalidEpoch: 2, TopicIDError: 4, Parked: 6, ParkedLimit: 1024},
	}
	m := New("dev", func() Snapshot { return snap })
	s := scrape(t, m)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"queen_kafka_open_connections", nil, 3},
		{"queen_kafka_groups", []string{"state", "Stable"}, 2},
		{"queen_kafka_group_members", []string{"state", "Stable"}, 5},
		{"queen_kafka_groups", []string{"state", "Empty"}, 1},
		{"queen_kafka_rebalances_total", nil, 4},
		{"queen_kafka_consumer_groups", []string{"state", "Reconciling"}, 1},
		{"queen_kafka_consumer_group_members", []string{"state", "Reconciling"}, 6},
		{"queen_kafka_consumer_group_rebalances_total", nil, 9},
		{"queen_kafka_consumer_group_epoch_max", nil, 12},
		{"queen_kafka_consumer_group_assignments_total", nil, 8},
		{"queen_kafka_consumer_group_assignment_seconds_total", nil, 1.5},
		{"queen_kafka_idempotent_producers", nil, 6},
		{"queen_kafka_producer_sequence_windows", nil, 9},
		{"queen_kafka_producer_ids_reserved", nil, 1500},
		{"queen_kafka_producer_evictions_total", []string{"kind", "producer"}, 1},
		{"queen_kafka_producer_evictions_total", []string{"kind", "window"}, 2},
		{"queen_kafka_transactions_open", nil, 1},
		{"queen_kafka_transactions_total", []string{"outcome", "committed"}, 7},
		{"queen_kafka_transactions_total", []string{"outcome", "aborted"}, 2},
		{"queen_kafka_decode_budget_bytes", nil, 100},
		{"queen_kafka_decode_budget_limit_bytes", nil, 1000},
		{"queen_kafka_frame_budget_bytes", nil, 10},
		{"queen_kafka_frame_budget_limit_bytes", nil, 50},
		{"queen_kafka_fetch_budget_bytes", nil, 20},
		{"queen_kafka_fetch_budget_limit_bytes", nil, 60},
		{"queen_kafka_queen_answer_budget_bytes", nil, 30},
		{"queen_kafka_queen_answer_budget_limit_bytes", nil, 70},
		{"queen_kafka_fetch_sessions", nil, 2},
		{"queen_kafka_fetch_session_partitions", nil, 30},
		{"queen_kafka_fetch_session_evictions_total", nil, 5},
		{"queen_kafka_fetch_session_fetches_total", []string{"kind", "full"}, 3},
		{"queen_kafka_fetch_session_fetches_total", []string{"kind", "incremental"}, 40},
		{"queen_kafka_fetch_session_fetches_total", []string{"kind", "sessionless"}, 8},
		{"queen_kafka_fetch_session_errors_total", []string{"error", "FETCH_SESSION_ID_NOT_FOUND"}, 1},
		{"queen_kafka_fetch_session_errors_total", []string{"error", "INVALID_FETCH_SESSION_EPOCH"}, 2},
		{"queen_kafka_fetch_session_errors_total", []string{"error", "FETCH_SESSION_TOPIC_ID_ERROR"}, 4},
		{"queen_kafka_fetch_parked_reads", nil, 6},
		{"queen_kafka_fetch_parked_reads_limit", nil, 1024},
	} {
		require.Equal(t, c.want, value(t, s, c.name, c.labels...), "%s%v", c.name, c.labels)
	}
	_, ok := s.Sum("queen_kafka_cluster_live_nodes")
	require.False(t, ok, "no cluster series in single mode")

	snap.OpenConnections = 1
	snap.Cluster = &Cluster{Joined: true, Healthy: true, LiveNodes: 3, HeartbeatAge: 1500 * time.Millisecond, HeartbeatsOK: 10, HeartbeatsFailed: 1}
	s = scrape(t, m)
	require.Equal(t, 1.0, value(t, s, "queen_kafka_open_connections"), "read again at the next scrape")
	require.Equal(t, 3.0, value(t, s, "queen_kafka_cluster_live_nodes"))
	require.Equal(t, 1.5, value(t, s, "queen_kafka_cluster_heartbeat_age_seconds"))
	require.Equal(t, 1.0, value(t, s, "queen_kafka_cluster_joined"))
	require.Equal(t, 1.0, value(t, s, "queen_kafka_cluster_healthy"))
	require.Equal(t, 0.0, value(t, s, "queen_kafka_cluster_node_id_lost"))
	require.Equal(t, 10.0, value(t, s, "queen_kafka_cluster_heartbeats_total", "outcome", "ok"))
	require.Equal(t, 1.0, value(t, s, "queen_kafka_cluster_heartbeats_total", "outcome", "failed"))
}

// TestRequestAllocatesNothing: the hot path's children are resolved once.
func TestRequestAllocatesNothing(t *testing.T) {
	m := New("dev", nil)
	key := kmsg.Produce.Int16()
	m.Request(key, 9, 0, 1, 0, time.Millisecond)
	allocs := testing.AllocsPerRun(1000, func() {
		m.Request(key, 9, 0, 100, 0, time.Millisecond)
		m.Produced(5, 1)
		m.Sent(64)
	})
	require.Zero(t, allocs)
}

// TestNamingConventions: every family a node exports passes promlint, the
// Prometheus project's own checker of its naming conventions (counters end
// in _total, base units such as _seconds and _bytes, no unit a base unit
// replaces, snake_case, help text present), and every one of ours carries
// the queen_kafka_ prefix. Each family is given a sample first, the
// cluster's and the lazily created label children included, so none is
// checked by its absence.
func TestNamingConventions(t *testing.T) {
	m := New("dev", func() Snapshot {
		return Snapshot{Groups: []GroupState{{State: "Stable", Groups: 1, Members: 1}}, Cluster: &Cluster{Joined: true},
			ConsumerGroups: ConsumerGroups{States: []GroupState{{State: "Stable", Groups: 1, Members: 1}}}}
	})
	m.Request(kmsg.Produce.Int16(), 9, 0, 100, time.Second, time.Millisecond)
	m.Sent(1)
	m.Accepted()
	m.Produced(1, 1)
	m.Fetched(1, 1)
	m.FetchLag(1)
	m.Committed(1)
	m.QueenCall("POST /api/v1/push", queen.KindNone, time.Millisecond)
	m.Share(ShareDelta{Acquired: 1})
	fams, err := m.Gatherer().Gather()
	require.NoError(t, err)

	ours := 0
	for _, f := range fams {
		if name := f.GetName(); !strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, "process_") {
			require.True(t, strings.HasPrefix(name, ns+"_"), "%s lacks the %s_ prefix", name, ns)
			ours++
		}
	}
	// Every family New registers, the state collector's cluster ones
	// included: a family missing here was never linted.
	require.Equal(t, 60, ours, "families of ours in the scrape (23 event families, 6 of them the share data path's, 37 of the state collector)")

	problems, err := promlint.NewWithMetricFamilies(fams).Lint()
	require.NoError(t, err)
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

// TestShareDelta: a share report lands on its counters, the in-flight
// gauge moving both ways, deliveries by their count.
func TestShareDelta(t *testing.T) {
	m := New("dev", nil)
	d := ShareDelta{Acquired: 3, Accepted: 2, Released: 1, Rejected: 1, AckRefused: 1, Archived: 2, LockExpiries: 1, InFlight: 5}
	d.Deliveries[1], d.Deliveries[2] = 2, 1
	m.Share(d)
	m.Share(ShareDelta{InFlight: -2})
	got := map[string]float64{}
	fams, err := m.Gatherer().Gather()
	require.NoError(t, err)
	for _, f := range fams {
		for _, mt := range f.GetMetric() {
			key := f.GetName()
			for _, l := range mt.GetLabel() {
				key += "," + l.GetValue()
			}
			got[key] = mt.GetCounter().GetValue() + mt.GetGauge().GetValue()
		}
	}
	for k, v := range map[string]float64{"queen_kafka_share_inflight_records": 3, "queen_kafka_share_acquired_records_total": 3,
		"queen_kafka_share_deliveries_total,1": 2, "queen_kafka_share_deliveries_total,2": 1, "queen_kafka_share_deliveries_total,3": 0,
		"queen_kafka_share_acknowledgements_total,accept": 2, "queen_kafka_share_acknowledgements_total,release": 1,
		"queen_kafka_share_acknowledgements_total,reject": 1, "queen_kafka_share_acknowledgements_total,refused": 1,
		"queen_kafka_share_archived_records_total": 2, "queen_kafka_share_lock_expiries_total": 1} {
		require.Equal(t, v, got[k], k)
	}
}
