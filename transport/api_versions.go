package transport

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ApiVersions answers ApiVersions v0–v5 with the version table: the
// handler of its row.
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
var ApiVersions = Handle(apiVersions)

func apiVersions(_ context.Context, c *Conn, req *kmsg.ApiVersionsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if req.Version >= 5 {
		switch {
		case (req.ClusterID == nil) != (req.NodeID == -1):
			resp.ErrorCode = kerr.InvalidRequest.Code
			return resp, nil
		case req.ClusterID != nil && !c.srv.isSelf(*req.ClusterID, req.NodeID):
			resp.ErrorCode = kerr.RebootstrapRequired.Code
			return resp, nil
		}
	}
	resp.ApiKeys = c.srv.cfg.Table.Advertised()
	return resp, nil
}

// isSelf reports whether a client expecting broker nodeID of clusterID
// reached this one.
func (s *Server) isSelf(clusterID string, nodeID int32) bool {
	if s.cfg.Self == nil {
		return false
	}
	cluster, self := s.cfg.Self()
	return clusterID == cluster && nodeID == self
}

// unsupportedApiVersions is the answer to an ApiVersions version outside
// the window: UNSUPPORTED_VERSION with the table, encoded at v0 as the
// protocol prescribes, so that a client that led with a newer version
// reads the window and retries within it.
func (t *Table) unsupportedApiVersions() kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ApiKeys = t.Advertised()
	return resp
}
