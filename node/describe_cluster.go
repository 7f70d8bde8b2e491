package node

import (
	"context"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/transport"
)

// DescribeCluster v0–v2 (KIP-700): the brokers, cluster id and controller
// id of the same topology Metadata answers, so the two never disagree.
//
// Version notes:
//   - v1: endpoint_type (KIP-919). Every node is a broker endpoint: asking
//     for controllers (2) is MISMATCHED_ENDPOINT_TYPE and an unknown type
//     UNSUPPORTED_ENDPOINT_TYPE, both INVALID_REQUEST at v0, as Kafka
//     answers on a broker listener;
//   - v2: include_fenced_brokers and is_fenced (KIP-1073). A node is in the
//     live set or absent, never registered-but-fenced, so no broker is
//     fenced and the flag changes nothing.
//
// cluster_authorized_operations is Kafka's "omitted" sentinel, as
// DescribeGroups answers it: there is no ACL model to compute it from.
func (n *Node) handleDescribeCluster(_ context.Context, _ *transport.Conn, req *kmsg.DescribeClusterRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.ClusterAuthorizedOperations = math.MinInt32
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
