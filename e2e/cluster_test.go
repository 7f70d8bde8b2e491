package e2e

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// startCluster starts n cluster-mode facades (node ids 1..n) in front of
// dev, sharing one cluster name and one Queen credential, and waits until
// every node reports all n brokers.
func startCluster(t testing.TB, dev *queenDev, n int, overrides map[string]string) []*facade {
	t.Helper()
	name := uniq("e2e-cluster")
	token := uniq("cluster-token")
	var fs []*facade
	for id := 1; id <= n; id++ {
		env := map[string]string{
			"QUEEN_KAFKA_NODE_ID":              strconv.Itoa(id),
			"QUEEN_KAFKA_CLUSTER":              name,
			"QUEEN_TOKEN":                      token,
			"QUEEN_KAFKA_CLUSTER_HEARTBEAT_MS": "500",
			"QUEEN_KAFKA_CLUSTER_TTL_MS":       "3000",
		}
		for k, v := range overrides {
			env[k] = v
		}
		fs = append(fs, startFacade(t, dev, env))
	}
	for _, f := range fs {
		cl := newKgo(t, []string{f.addr})
		eventually(t, 15*time.Second, fmt.Sprintf("%s lists %d brokers", f.addr, n), func() (bool, string) {
			resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctxT(t, 5*time.Second), cl)
			if err != nil {
				return false, err.Error()
			}
			return len(resp.Brokers) == n, fmt.Sprintf("%d brokers", len(resp.Brokers))
		})
	}
	return fs
}

// TestClusterBodies runs the very bodies TestSingleNode runs, unchanged,
// against three cluster-mode facades: clients bootstrap at all three and
// follow leaders and coordinators wherever the hash ring puts them.
func TestClusterBodies(t *testing.T) {
	t.Parallel()
	dev, _ := sharedEnv(t)
	fs := startCluster(t, dev, 3, nil)
	var boot []string
	for _, f := range fs {
		boot = append(boot, f.addr)
	}
	runBodies(t, target{name: "cluster", bootstrap: boot, dev: dev})
}
