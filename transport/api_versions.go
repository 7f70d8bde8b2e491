package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleApiVersions answers ApiVersions v0–v5 with the version table.
// Supported and finalized features are never sent, at any version: the
// facade negotiates none (no transaction.version, group.version...).
//
// Version notes:
//   - v3: flexible; client software name and version (logged, never refused);
//   - v4: only lifts v3's ban on a supported feature with min version 0
//     (KAFKA-17011), and none is sent;
//   - v5: cluster_id and node_id (KIP-1242): a client names the broker it
//     expects to reach, and a connection routed to another (a stale DNS
//     name, a load balancer) is answered REBOOTSTRAP_REQUIRED, with no keys;
//     a node id without a cluster id, or the reverse, is INVALID_REQUEST.
//     The ids are those Metadata answers.
func (n *Node) handleApiVersions(_ context.Context, _ *Conn, req *kmsg.ApiVersionsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if req.Version >= 5 {
		switch {
		case (req.ClusterID == nil) != (req.NodeID == -1):
			resp.ErrorCode = kerr.InvalidRequest.Code
			return resp, nil
		case req.ClusterID != nil && (*req.ClusterID != n.topo.clusterID() || req.NodeID != n.topo.selfID()):
			resp.ErrorCode = kerr.RebootstrapRequired.Code
			return resp, nil
		}
	}
	resp.ApiKeys = advertisedKeys()
	return resp, nil
}

// unsupportedApiVersions is the answer to an ApiVersions version outside
// the window: UNSUPPORTED_VERSION with the table, encoded at v0 as the
// protocol prescribes, so that a client that led with a newer version
// reads the window and retries within it.
func unsupportedApiVersions() kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ApiKeys = advertisedKeys()
	return resp
}

// advertisedKeys is a copy of the table's answer, so that a response
// being encoded never aliases another's.
func advertisedKeys() []kmsg.ApiVersionsResponseApiKey {
	return append([]kmsg.ApiVersionsResponseApiKey(nil), advertised...)
}
