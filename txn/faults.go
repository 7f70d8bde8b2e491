package txn

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/queen-mq/queen-kafka/queen"
)

// queenCode maps a failed call to Queen on a transaction API: a 401 or 403
// is TRANSACTIONAL_ID_AUTHORIZATION_FAILED, fatal, what Apache Kafka
// answers a principal that may not write the transactional id; anything
// else — a 429, a transient, transport, timeout or server failure, an
// answer that broke the contract — is COORDINATOR_NOT_AVAILABLE, which
// every client retries after finding the coordinator again. Never a
// throttle: a claim or a commit is once per transaction, and the volume a
// throttle is about is the produce path's.
func queenCode(err error) int16 {
	if queen.IsAuth(err) {
		return kerr.TransactionalIDAuthorizationFailed.Code
	}
	return kerr.CoordinatorNotAvailable.Code
}
