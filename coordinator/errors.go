package coordinator

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/queen-mq/queen-kafka/queen"
)

// kvCode maps a failed KV call to the Kafka code a group or offset API
// answers (§0.2): an auth refusal is GROUP_AUTHORIZATION_FAILED; a 429 is
// COORDINATOR_NOT_AVAILABLE and never a throttle, because a consumer that
// sleeps its commit sleeps its poll loop; every transient, transport,
// timeout or server failure is COORDINATOR_NOT_AVAILABLE, which every
// client retries after re-finding the coordinator. A 400 or 413 is a
// request the contract refuses, which retrying cannot fix.
func kvCode(err error) int16 {
	var pe *queen.PreconditionError
	if errors.Is(err, errLostFence) || errors.As(err, &pe) {
		// Only the fence is ever required; losing it means another node
		// coordinates the group now.
		return kerr.NotCoordinator.Code
	}
	switch queen.KindOf(err) {
	case queen.KindNone:
		return 0
	case queen.KindUnauthorized, queen.KindForbidden:
		return kerr.GroupAuthorizationFailed.Code
	case queen.KindBadRequest, queen.KindTooLarge:
		return kerr.UnknownServerError.Code
	default:
		return kerr.CoordinatorNotAvailable.Code
	}
}

// errLostFence is a fence another node holds: this node no longer
// coordinates the group.
var errLostFence = errors.New("fence held by another node")

// writeCode is the code a failed write of g answers. A lost fence also
// drops g: its state is another node's now, and a member that re-finds
// the coordinator must not be answered from this stale copy.
func (c *Coordinator) writeCode(g *group, err error) int16 {
	if errors.Is(err, errLostFence) {
		c.dropGroup(g)
	}
	return kvCode(err)
}

// QueenCode is the Kafka code the group and offset APIs answer for a Queen
// failure (queen-api.md §0.2 as kvCode maps it), for the node's by-id
// translations that read the catalogue before a group request.
func QueenCode(err error) int16 { return kvCode(err) }
