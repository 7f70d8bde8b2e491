package node

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/queen-mq/queen-kafka/queen"
)

// topicFault maps a failed Queen call on a topic API (Metadata, the admin
// APIs) to the Kafka code a client acts on correctly, the throttle a 429
// carries, and the sanitised reason for an error_message field.
//
//	401/403       TOPIC_AUTHORIZATION_FAILED, fatal for the client
//	429           LEADER_NOT_AVAILABLE plus throttle_time_ms (Retry-After)
//	400, 413      INVALID_REQUEST: the same call will fail again
//	anything else LEADER_NOT_AVAILABLE, retriable
func topicFault(err error) (code int16, throttleMs int32, msg string) {
	msg = "queen: " + queen.KindOf(err).String()
	var qe *queen.Error
	if errors.As(err, &qe) && qe.Message != "" {
		msg = queen.Sanitize(qe.Message)
	} else if err != nil {
		msg = queen.Sanitize(err.Error())
	}
	if ra, ok := queen.RetryAfter(err); ok {
		return kerr.LeaderNotAvailable.Code, queen.ThrottleMillis(ra), msg
	}
	switch queen.KindOf(err) {
	case queen.KindUnauthorized, queen.KindForbidden:
		return kerr.TopicAuthorizationFailed.Code, 0, msg
	case queen.KindBadRequest, queen.KindTooLarge:
		return kerr.InvalidRequest.Code, 0, msg
	}
	return kerr.LeaderNotAvailable.Code, 0, msg
}

// errorMessage is a response's error_message for code: the reason when
// the code is an error, null when it is not.
func errorMessage(code int16, msg string) *string {
	if code == 0 {
		return nil
	}
	return &msg
}

// topicWriteFault is topicFault for a topic write refused by Queen
// (DeleteTopics, CreatePartitions, the alter APIs): a 429 is answered
// REQUEST_TIMED_OUT with its throttle_time_ms rather than
// LEADER_NOT_AVAILABLE.
func topicWriteFault(err error) (code int16, throttleMs int32, msg string) {
	code, throttleMs, msg = topicFault(err)
	if throttleMs > 0 {
		code = kerr.RequestTimedOut.Code
	}
	return code, throttleMs, msg
}
