package e2e

import (
	"slices"
	"strconv"
	"testing"
	"time"
)

// Cluster-mode figures of issue 5 (`make bench` prints them):
//
//   - BenchmarkClusterFailover: seconds from SIGKILL of a group's
//     coordinator until both survivors name the same new owner
//     (agreed_s_*) and until the group commits through it (committing_s_*),
//     at QUEEN_KAFKA_CLUSTER_TTL_MS=3000, heartbeat 500 ms, join delay 0,
//     under continuous produce and consume; min, median and max of three
//     runs, each on a fresh cluster.
//   - BenchmarkClusterSIGTERMDrop: seconds from SIGTERM of a node until both
//     peers stop listing it, three rounds on one cluster.
//   - BenchmarkClusterKVAtRest: KV calls per second one idle node makes to
//     Queen, counted by a proxy between each facade and queen-dev (queen-dev
//     keeps no counter), at the default heartbeat and at the suite's.

func BenchmarkClusterFailover(b *testing.B) {
	requireBin(b, queenDevBin)
	var agreed, committing []float64
	for range 3 * b.N {
		r := runFailover(b)
		agreed = append(agreed, r.agreed.Seconds())
		committing = append(committing, r.committing.Seconds())
		b.Logf("run %d: agreed on node %d after %.2fs, committing after %.2fs (%d acked, %d redelivered)",
			len(agreed), r.newOwner, r.agreed.Seconds(), r.committing.Seconds(), r.acked, r.duplicates)
	}
	reportSpread(b, "agreed_s", agreed)
	reportSpread(b, "committing_s", committing)
}

func BenchmarkClusterSIGTERMDrop(b *testing.B) {
	requireBin(b, queenDevBin)
	c := newTestCluster(b, clusterOpts{nodes: 3})
	var drops []float64
	for range 3 * b.N {
		drops = append(drops, sigtermDrop(b, c, 3).Seconds())
		if err := c.node(3).restart(); err != nil {
			b.Fatalf("restart node 3: %v", err)
		}
		for id := 1; id <= 3; id++ {
			c.waitBrokers(b, id, []int32{1, 2, 3}, 10*time.Second)
		}
	}
	reportSpread(b, "drop_s", drops)
}

func BenchmarkClusterKVAtRest(b *testing.B) {
	requireBin(b, queenDevBin)
	for _, hb := range []struct{ heartbeat, ttl time.Duration }{
		{2 * time.Second, 10 * time.Second}, // the documented defaults
		{clusterHeartbeat, clusterTTL},      // the suite's
	} {
		b.Run("heartbeat="+hb.heartbeat.String(), func(b *testing.B) {
			c := newTestCluster(b, clusterOpts{nodes: 3, proxies: true, env: map[string]string{
				"QUEEN_KAFKA_CLUSTER_HEARTBEAT_MS": strconv.Itoa(int(hb.heartbeat.Milliseconds())),
				"QUEEN_KAFKA_CLUSTER_TTL_MS":       strconv.Itoa(int(hb.ttl.Milliseconds())),
			}})
			// At least five seconds and ten heartbeats, so one beat more or
			// less at either edge of the window moves the rate by under 10%.
			window := max(5*time.Second, 10*hb.heartbeat) * time.Duration(b.N)
			before := make([]int64, len(c.proxies))
			for i, p := range c.proxies {
				before[i] = p.kvCalls.Load()
			}
			time.Sleep(window) // the measurement: an idle cluster, no client connected
			var rates []float64
			for i, p := range c.proxies {
				rates = append(rates, float64(p.kvCalls.Load()-before[i])/window.Seconds())
			}
			b.Logf("KV calls per second per node over %v: %v", window, rates)
			reportSpread(b, "kv_calls_per_s_per_node", rates)
		})
	}
}

// reportSpread reports min, median and max of xs as custom metrics.
func reportSpread(b *testing.B, name string, xs []float64) {
	b.Helper()
	if len(xs) == 0 {
		return
	}
	s := spreadOf(xs)
	b.ReportMetric(s.min, name+"_min")
	b.ReportMetric(s.med, name+"_median")
	b.ReportMetric(s.max, name+"_max")
	b.Logf("%s: %v", name, slices.Sorted(slices.Values(xs)))
}
