package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/transport"
)

// handleCreateAcls refuses every creation with SECURITY_DISABLED, one
// result per creation as Kafka's own error response maps over the request:
// an empty creations list is an empty result list and no error at all.
func (n *Node) handleCreateAcls(_ context.Context, _ *transport.Conn, req *kmsg.CreateACLsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	resp.Results = make([]kmsg.CreateACLsResponseResult, len(req.Creations))
	for i := range resp.Results {
		r := kmsg.NewCreateACLsResponseResult()
		r.ErrorCode = kerr.SecurityDisabled.Code
		r.ErrorMessage = kmsg.StringPtr(securityDisabled)
		resp.Results[i] = r
	}
	return resp, nil
}
