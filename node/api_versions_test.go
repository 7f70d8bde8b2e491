package node

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiVersionsV5 asks n, naming cluster and node (nil, -1: neither).
func apiVersionsV5(t *testing.T, n *Node, cluster *string, node int32) *kmsg.ApiVersionsResponse {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version, req.ClientSoftwareName, req.ClientSoftwareVersion = 5, "test", "1"
	req.ClusterID, req.NodeID = cluster, node
	return call[*kmsg.ApiVersionsResponse](t, n, testConn(t, n), req)
}

// TestApiVersionsV5ChecksTheNamedBroker (KIP-1242): the ids Metadata
// answers pass; another cluster or node is REBOOTSTRAP_REQUIRED and one id
// without the other INVALID_REQUEST, both with no keys; naming neither is
// the table, as for a seed.
func TestApiVersionsV5ChecksTheNamedBroker(t *testing.T) {
	n, _ := newTestNode(t, nil)
	md := metadata(t, n, testConn(t, n), 9, false)
	self := md.Brokers[0].NodeID
	for _, c := range []struct {
		name    string
		cluster *string
		node    int32
		code    int16
	}{
		{"neither", nil, -1, 0},
		{"this broker", md.ClusterID, self, 0},
		{"another cluster", kmsg.StringPtr("staging"), self, kerr.RebootstrapRequired.Code},
		{"another node", md.ClusterID, self + 1, kerr.RebootstrapRequired.Code},
		{"node without cluster", nil, self, kerr.InvalidRequest.Code},
		{"cluster without node", md.ClusterID, -1, kerr.InvalidRequest.Code},
	} {
		resp := apiVersionsV5(t, n, c.cluster, c.node)
		if resp.ErrorCode != c.code {
			t.Fatalf("%s: error %d, want %d", c.name, resp.ErrorCode, c.code)
		}
		if want := len(apiRows) * boolInt(c.code == 0); len(resp.ApiKeys) != want {
			t.Fatalf("%s: %d keys, want %d", c.name, len(resp.ApiKeys), want)
		}
		// A refusal carries no features; an answer the one the node has.
		if feats := len(resp.SupportedFeatures) + len(resp.FinalizedFeatures); c.code != 0 && (feats != 0 || resp.FinalizedFeaturesEpoch != -1) || c.code == 0 && feats != 2 {
			t.Fatalf("%s: features %+v %+v epoch %d", c.name, resp.SupportedFeatures, resp.FinalizedFeatures, resp.FinalizedFeaturesEpoch)
		}
	}
	// Below v5 the ids are not on the wire and nothing is checked.
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version, req.ClientSoftwareName, req.ClientSoftwareVersion = 4, "test", "1"
	if resp := call[*kmsg.ApiVersionsResponse](t, n, testConn(t, n), req); resp.ErrorCode != 0 || len(resp.ApiKeys) != len(apiRows) {
		t.Fatalf("v4: %+v", resp)
	}
}

// TestClusterApiVersionsV5: each node of three accepts its own id and
// turns away a connection meant for another node.
func TestClusterApiVersionsV5(t *testing.T) {
	_, url := newDevQueen(t)
	nodes := []*Node{joinedNode(t, url, 1), joinedNode(t, url, 2), joinedNode(t, url, 3)}
	waitView(t, []int32{1, 2, 3}, nodes...)
	for _, n := range nodes {
		for id := int32(1); id <= 3; id++ {
			want := kerr.RebootstrapRequired.Code
			if id == int32(n.cfg.NodeID) {
				want = 0
			}
			if resp := apiVersionsV5(t, n, kmsg.StringPtr("unit"), id); resp.ErrorCode != want {
				t.Fatalf("node %d asked as node %d: error %d, want %d", n.cfg.NodeID, id, resp.ErrorCode, want)
			}
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
