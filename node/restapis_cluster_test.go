package node

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestClusterFindCoordinatorBatch: one v4+ request naming groups owned by
// each of three nodes, asked at every node, answers each key with its own
// owner, for group and transactional ids alike.
func TestClusterFindCoordinatorBatch(t *testing.T) {
	_, url := newDevQueen(t)
	nodes := []*Node{joinedNode(t, url, 1), joinedNode(t, url, 2), joinedNode(t, url, 3)}
	live := []int32{1, 2, 3}
	waitView(t, live, nodes...)
	var keys []string
	owner := map[string]int32{}
	for _, id := range live {
		for _, prefix := range []string{"batch-a", "batch-b"} {
			k := groupOwnedBy(t, live, id, prefix)
			keys = append(keys, k)
			owner[k] = id
		}
	}
	for _, n := range nodes {
		for v := int16(4); v <= 6; v++ {
			for _, typ := range []int8{0, 1} {
				req := kmsg.NewPtrFindCoordinatorRequest()
				req.Version, req.CoordinatorType, req.CoordinatorKeys = v, typ, keys
				resp := call[*kmsg.FindCoordinatorResponse](t, n, testConn(t, n), req)
				require.Len(t, resp.Coordinators, len(keys))
				for i, a := range resp.Coordinators {
					id := owner[keys[i]]
					require.Equal(t, keys[i], a.Key)
					require.Equal(t, int16(0), a.ErrorCode, "node %d v%d %s", n.cfg.NodeID, v, a.Key)
					require.Equal(t, id, a.NodeID, "node %d v%d type %d %s", n.cfg.NodeID, v, typ, a.Key)
					require.Equal(t, hostOf(id), a.Host)
					require.Equal(t, 9090+id, a.Port)
				}
			}
		}
	}
}

func hostOf(id int32) string { return fmt.Sprintf("n%d.test", id) }

// TestClusterDescribeCluster: every node describes the cluster Metadata
// describes: the same brokers, cluster id and controller.
func TestClusterDescribeCluster(t *testing.T) {
	_, url := newDevQueen(t)
	nodes := []*Node{joinedNode(t, url, 1), joinedNode(t, url, 2), joinedNode(t, url, 3)}
	waitView(t, []int32{1, 2, 3}, nodes...)
	for _, n := range nodes {
		md := metadata(t, n, testConn(t, n), 9, false)
		for v := int16(0); v <= 2; v++ {
			req := kmsg.NewPtrDescribeClusterRequest()
			req.Version = v
			req.IncludeFencedBrokers = v == 2
			resp := call[*kmsg.DescribeClusterResponse](t, n, testConn(t, n), req)
			require.Equal(t, int16(0), resp.ErrorCode)
			require.Equal(t, *md.ClusterID, resp.ClusterID)
			require.Equal(t, "unit", resp.ClusterID)
			require.Equal(t, md.ControllerID, resp.ControllerID)
			require.Equal(t, int32(1), resp.ControllerID)
			require.Len(t, resp.Brokers, len(md.Brokers))
			for i, b := range resp.Brokers {
				mb := md.Brokers[i]
				require.Equal(t, mb.NodeID, b.NodeID)
				require.Equal(t, mb.Host, b.Host)
				require.Equal(t, mb.Port, b.Port)
				require.False(t, b.IsFenced)
			}
			ids := make([]int32, 0, len(resp.Brokers))
			for _, b := range resp.Brokers {
				ids = append(ids, b.NodeID)
			}
			require.True(t, slices.Equal([]int32{1, 2, 3}, ids), "node %d v%d brokers %v", n.cfg.NodeID, v, ids)
		}
	}
}
