package transport

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ApiVersions answers with the version table: the handler of its row.
// From v3 it lists the table's features (KIP-584), supported and
// finalized. A client that names the broker it
// expects (cluster and node ids, those Metadata answers) and reached
// another (a stale DNS name, a load balancer) is answered
// REBOOTSTRAP_REQUIRED with no keys. Versions: see its row in the version table.
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
	if req.Version >= 3 {
		addFeatures(resp, c.srv.cfg.Table.Features())
	}
	return resp, nil
}

// finalizedEpoch is the epoch of the finalized features: they never change
// while the process runs, and a client only tells "none" (-1) from any.
const finalizedEpoch = 1

// addFeatures lists fs in resp: each supported, and those finalized at a
// level above 0 as finalized.
func addFeatures(resp *kmsg.ApiVersionsResponse, fs []Feature) {
	for _, f := range fs {
		sf := kmsg.NewApiVersionsResponseSupportedFeature()
		sf.Name, sf.MinVersion, sf.MaxVersion = f.Name, f.Min, f.Max
		resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
		if f.Finalized > 0 {
			ff := kmsg.NewApiVersionsResponseFinalizedFeature()
			ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = f.Name, f.Finalized, f.Finalized
			resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
		}
	}
	if len(resp.FinalizedFeatures) > 0 {
		resp.FinalizedFeaturesEpoch = finalizedEpoch
	}
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
