package faults

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/queen-mq/queen-kafka/queen"
)

// GroupCode maps a failed KV call to the Kafka code a group or offset API
// answers (§0.2), for the classic coordinator and the KIP-848 groups alike:
// a failed precondition is NOT_COORDINATOR, because only a group's fence
// (or its compare-and-set row) is ever required and losing it means another
// node coordinates the group now; an auth refusal is
// GROUP_AUTHORIZATION_FAILED; a 429 is COORDINATOR_NOT_AVAILABLE and never a
// throttle, because a consumer that sleeps its commit sleeps its poll loop;
// every transient, transport, timeout or server failure is
// COORDINATOR_NOT_AVAILABLE, which every client retries after re-finding the
// coordinator. A 400 or 413 is a request the contract refuses, which
// retrying cannot fix. A caller with its own lost-fence error maps that to
// NOT_COORDINATOR before calling.
func GroupCode(err error) int16 {
	var pe *queen.PreconditionError
	if errors.As(err, &pe) {
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
