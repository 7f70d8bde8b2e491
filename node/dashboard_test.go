package node

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
	"github.com/queen-mq/queen-kafka/recordbatch/batchtest"
)

// dashboardFile is the Grafana dashboard shipped beside the manifests.
const dashboardFile = "../k8s/grafana/queen-kafka.json"

type dashPanel struct {
	ID      int    `json:"id"`
	Type    string `json:"type"`
	Title   string `json:"title"`
	GridPos struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Datasource *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []dashPanel `json:"panels"`
}

type dashboard struct {
	Title      string      `json:"title"`
	UID        string      `json:"uid"`
	Panels     []dashPanel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string          `json:"name"`
			Query json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

// dashboardQueries reads the dashboard and returns every query in it, the
// template variables' included, checking its shape on the way: unique
// panel ids, panels that do not overlap, and every graph on the
// ${datasource} variable with at least one query.
func dashboardQueries(t *testing.T) []string {
	raw, err := os.ReadFile(dashboardFile)
	require.NoError(t, err)
	var d dashboard
	require.NoError(t, json.Unmarshal(raw, &d))
	require.NotEmpty(t, d.Title)
	require.NotEmpty(t, d.UID)
	var queries []string
	ids := map[int]bool{}
	type cell struct{ x, y int }
	taken := map[cell]string{}
	var walk func([]dashPanel)
	walk = func(ps []dashPanel) {
		for _, p := range ps {
			require.False(t, ids[p.ID], "panel id %d twice", p.ID)
			ids[p.ID] = true
			require.LessOrEqual(t, p.GridPos.X+p.GridPos.W, 24, "%q is wider than the grid", p.Title)
			for x := p.GridPos.X; x < p.GridPos.X+p.GridPos.W; x++ {
				for y := p.GridPos.Y; y < p.GridPos.Y+p.GridPos.H; y++ {
					other, clash := taken[cell{x, y}]
					require.False(t, clash, "%q overlaps %q", p.Title, other)
					taken[cell{x, y}] = p.Title
				}
			}
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			require.NotNil(t, p.Datasource, p.Title)
			require.Equal(t, "${datasource}", p.Datasource.UID, p.Title)
			require.NotEmpty(t, p.Targets, p.Title)
			for _, tg := range p.Targets {
				require.NotEmpty(t, tg.Expr, p.Title)
				queries = append(queries, tg.Expr)
			}
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		var q struct {
			Query string `json:"query"`
		}
		if json.Unmarshal(v.Query, &q) == nil && q.Query != "" {
			queries = append(queries, q.Query)
		}
	}
	return queries
}

// metricName is a series name in a query: ours, the Go runtime's, the
// process's.
var metricName = regexp.MustCompile(`\b(?:queen_kafka|go|process)_[a-z0-9_]+\b`)

// TestDashboardQueriesExportedMetrics: every series the dashboard queries
// is one a node exports, gathered from live registries after a small
// workload (produce, a group consuming and committing, a throttled
// produce) on a single-mode node and on a cluster node.
func TestDashboardQueriesExportedMetrics(t *testing.T) {
	queries := dashboardQueries(t)

	fq, url := newDevQueen(t)
	addr, env := fixedAddrEnv(t, map[string]string{"QUEEN_KAFKA_GROUP_JOIN_DELAY_MS": "0"})
	n := newNodeOn(t, url, env)
	serveTestNode(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("dash"), kgo.AllowAutoTopicCreation(), kgo.ProducerLinger(0))
	require.NoError(t, err)
	defer prod.Close()
	for i := range 10 {
		require.NoError(t, prod.ProduceSync(ctx, &kgo.Record{Value: []byte{byte(i)}}).FirstErr())
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("dash-group"), kgo.ConsumeTopics("dash"), kgo.FetchMaxWait(100*time.Millisecond))
	require.NoError(t, err)
	got := 0
	for got < 10 && ctx.Err() == nil {
		got += len(cons.PollFetches(ctx).Records())
	}
	require.NoError(t, cons.CommitUncommittedOffsets(ctx))
	cons.Close()
	fq.setFault(func(r *http.Request) (int, string, string) {
		if r.URL.Path == "/api/v1/push" {
			return 429, "1", "slow down"
		}
		return 0, "", ""
	})
	k := dial(t, addr)
	k.roundTrip(produceReq(9, -1, "dash", 0, batchtest.Batch{FirstTS: 1, Records: batchtest.SampleRecords()}.Encode(t)))
	fq.setFault(nil)

	clustered := joinedNode(t, url, 1)
	exported := map[string]bool{}
	for _, m := range []*Node{n, clustered} {
		fams, err := m.metrics.Gatherer().Gather()
		require.NoError(t, err)
		for _, name := range testsupport.ScrapeFamilies(fams).Names() {
			exported[name] = true
		}
	}
	require.True(t, exported["queen_kafka_throttled_responses_total"], "the workload was throttled")

	var queried []string
	for _, q := range queries {
		for _, name := range metricName.FindAllString(q, -1) {
			if !slices.Contains(queried, name) {
				queried = append(queried, name)
			}
			require.True(t, exported[name], "the dashboard queries %s, which no node exports:\n%s", name, q)
		}
	}
	// The dashboard covers each area the issue names.
	for _, area := range []string{"queen_kafka_produce_records_total", "queen_kafka_request_duration_seconds_bucket", "queen_kafka_requests_total",
		"queen_kafka_queen_calls_total", "queen_kafka_groups", "queen_kafka_fetch_lag_records_bucket", "queen_kafka_cluster_live_nodes"} {
		require.Contains(t, queried, area)
	}
	require.False(t, strings.Contains(strings.Join(queries, "\n"), "job="), "the dashboard must not assume a scrape job name")
}
