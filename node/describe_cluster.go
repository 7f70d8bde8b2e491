package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/authz"
	"github.com/queen-mq/queen-kafka/transport"
)

// handleDescribeCluster answers the brokers, cluster id and controller id
// of the same topology Metadata answers, so the two never disagree. Every
// node is a broker endpoint, and a node is in the live set or absent, never
// registered-but-fenced.
// cluster_authorized_operations, when asked, is every cluster operation,
// as a Kafka broker with no authorizer answers (package authz).
func (n *Node) handleDescribeCluster(_ context.Context, _ *transport.Conn, req *kmsg.DescribeClusterRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.ClusterAuthorizedOperations = authz.Ops(req.IncludeClusterAuthorizedOperations, authz.Cluster)
	const brokerEndpoint, controllerEndpoint = 1, 2
	if req.EndpointType != brokerEndpoint {
		code, msg := kerr.UnsupportedEndpointType.Code, "unsupported endpoint type"
		if req.EndpointType == controllerEndpoint {
			code, msg = kerr.MismatchedEndpointType.Code, "this is a broker endpoint; the facade has no controller endpoints"
		}
		if req.Version == 0 {
			code = kerr.InvalidRequest.Code
		}
		resp.ErrorCode, resp.ErrorMessage = code, &msg
		return resp, nil
	}
	resp.EndpointType = brokerEndpoint
	resp.ClusterID = n.topo.ClusterID()
	resp.ControllerID = n.topo.ControllerID()
	for _, b := range n.topo.Brokers() {
		db := kmsg.NewDescribeClusterResponseBroker()
		db.NodeID, db.Host, db.Port, db.Rack = b.NodeID, b.Host, b.Port, b.Rack
		resp.Brokers = append(resp.Brokers, db)
	}
	return resp, nil
}
