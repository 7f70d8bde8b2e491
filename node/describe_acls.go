package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/transport"
)

// handleDescribeAcls answers SECURITY_DISABLED, as a Kafka broker with no
// authorizer does. Advertising the key rather than leaving it out is what
// turns "this broker is too old" into the sentence security-off prints.
func (n *Node) handleDescribeAcls(_ context.Context, _ *transport.Conn, req *kmsg.DescribeACLsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	resp.ErrorCode = kerr.SecurityDisabled.Code
	resp.ErrorMessage = kmsg.StringPtr(describeAclsDisabled)
	return resp, nil
}
