package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/transport"
)

// handleDeleteAcls refuses every filter with SECURITY_DISABLED and an
// empty matching_acls.
func (n *Node) handleDeleteAcls(_ context.Context, _ *transport.Conn, req *kmsg.DeleteACLsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	resp.Results = make([]kmsg.DeleteACLsResponseResult, len(req.Filters))
	for i := range resp.Results {
		r := kmsg.NewDeleteACLsResponseResult()
		r.ErrorCode = kerr.SecurityDisabled.Code
		r.ErrorMessage = kmsg.StringPtr(securityDisabled)
		r.MatchingACLs = []kmsg.DeleteACLsResponseResultMatchingACL{}
		resp.Results[i] = r
	}
	return resp, nil
}
