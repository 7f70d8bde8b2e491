package faults

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/queen-mq/queen-kafka/internal/ratelog"
	"github.com/queen-mq/queen-kafka/queen"
)

// What a Kafka client is answered when a call to Queen fails, in one place:
// queen-api.md §0.2 ("Status codes, and what the facade does with them"),
// the per-route "Facade reading" and "Facade checks" paragraphs, and seed
// 001's "Throttling" table. Every API family is one faultRule row of the
// table below; what differs between families is data, the mapping is
// faultRule.apply. SASL's credential check, which answers 401/403 only and
// closes the connection on anything else, is SASL. faults_test.go
// holds the contract's rows.
//
// Not here: the group and offset APIs' column of §0.2 (401/403
// GROUP_AUTHORIZATION_FAILED, a 429 COORDINATOR_NOT_AVAILABLE and never a
// throttle) is the coordinator's own (coordinator/errors.go, kvCode), since
// only it knows a lost fence; fetch entries' in-band `error` values are read
// where the entries are (node's Fetch handler).

// faultRule is what one API family answers for each way a Queen call can
// fail (queen.Kind).
type faultRule struct {
	throttled  int16 // 429, answered together with throttle_time_ms from Retry-After
	auth       int16 // 401, 403
	badRequest int16 // 400: refused whole, and refused again if resent
	tooLarge   int16 // 413
	protocol   int16 // a 2xx whose body broke the contract
	other      int16 // 408/502/503/504, 500, transport, timeout (and a cancel that does not close)
	// closeOnCancel: a canceled call is the connection going away, so the
	// request is not answered at all (apply's fatal).
	closeOnCancel bool
	// prefix goes before Queen's reason in error_message.
	prefix string
}

// The table: one row per API family.
var (
	// Produce (seed 001 "Throttling", §5): a 429 and anything transient is
	// REQUEST_TIMED_OUT, which every client's produce path retries; 413 is
	// MESSAGE_TOO_LARGE, on which a Java producer splits the batch and
	// retries; 400 INVALID_RECORD.
	produceRule = faultRule{
		throttled:     kerr.RequestTimedOut.Code,
		auth:          kerr.TopicAuthorizationFailed.Code,
		badRequest:    kerr.InvalidRecord.Code,
		tooLarge:      kerr.MessageTooLarge.Code,
		protocol:      kerr.UnknownServerError.Code,
		other:         kerr.RequestTimedOut.Code,
		closeOnCancel: true,
		prefix:        "queen: ",
	}
	// Fetch (seed 001 "Throttling", §6): a 429 is throttle_time_ms with no
	// records, error 0 and watermarks -1; anything transient
	// NOT_LEADER_OR_FOLLOWER, which every consumer retries after a metadata
	// refresh; a refusal resending cannot fix (400, 413) or a broken answer
	// UNKNOWN_SERVER_ERROR.
	fetchRule = faultRule{
		throttled:     0,
		auth:          kerr.TopicAuthorizationFailed.Code,
		badRequest:    kerr.UnknownServerError.Code,
		tooLarge:      kerr.UnknownServerError.Code,
		protocol:      kerr.UnknownServerError.Code,
		other:         kerr.NotLeaderForPartition.Code,
		closeOnCancel: true,
		prefix:        "queen: ",
	}
	// ListOffsets (§6, its bounds probe) is Fetch except that a 429 is
	// LEADER_NOT_AVAILABLE with its throttle: an offsets answer has no empty
	// form that a client would take as "ask again later".
	listOffsetsRule = fetchRule.throttledAs(kerr.LeaderNotAvailable.Code)
	// InitProducerId (the qk:producerids reservation, §7): 401/403 is
	// CLUSTER_AUTHORIZATION_FAILED, what Apache Kafka answers a principal
	// that may not write idempotently; anything retriable
	// COORDINATOR_LOAD_IN_PROGRESS, which every client's InitProducerId path
	// retries; a refusal resending cannot fix UNKNOWN_SERVER_ERROR.
	producerIDRule = faultRule{
		throttled:     kerr.CoordinatorLoadInProgress.Code,
		auth:          kerr.ClusterAuthorizationFailed.Code,
		badRequest:    kerr.UnknownServerError.Code,
		tooLarge:      kerr.UnknownServerError.Code,
		protocol:      kerr.CoordinatorLoadInProgress.Code,
		other:         kerr.CoordinatorLoadInProgress.Code,
		closeOnCancel: true,
	}
	// The topic APIs (Metadata, DescribeConfigs, the reads of the admin
	// APIs; seed 001 "Throttling" for Metadata): a 429 and anything else
	// LEADER_NOT_AVAILABLE, retriable; 400 and 413 INVALID_REQUEST. A cancel
	// is answered like any failure. The reason is Queen's, unprefixed.
	topicRule = faultRule{
		throttled:  kerr.LeaderNotAvailable.Code,
		auth:       kerr.TopicAuthorizationFailed.Code,
		badRequest: kerr.InvalidRequest.Code,
		tooLarge:   kerr.InvalidRequest.Code,
		protocol:   kerr.LeaderNotAvailable.Code,
		other:      kerr.LeaderNotAvailable.Code,
	}
	// A topic write refused by Queen (CreateTopics, DeleteTopics,
	// CreatePartitions, the alter APIs) is topicRule except that a 429 is
	// REQUEST_TIMED_OUT with its throttle_time_ms.
	topicWriteRule = topicRule.throttledAs(kerr.RequestTimedOut.Code)
	// The transaction APIs (InitProducerId's claim of qk:txn:, §7;
	// EndTxn's POST /api/v1/transaction, §8 "Facade checks"; a catalogue
	// read of AddPartitionsToTxn or TxnOffsetCommit): 401/403
	// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, fatal, what Apache Kafka
	// answers a principal that may not write the transactional id;
	// anything else — a 429, a 5xx, a transport failure, a refusal, a broken
	// answer, a rollback for any reason but the fence — COORDINATOR_NOT_AVAILABLE,
	// which every client retries after finding the coordinator again, and
	// with the stage kept. Never a throttle: a claim or a commit is once
	// per transaction. A unit rolled back on its fence (kv_precondition) is
	// PRODUCER_FENCED, decided by package txn before this rule, because
	// only it can tell a fence another producer moved from its own commit
	// that landed with its answer lost. A cancel is answered like any
	// failure.
	txnRule = faultRule{
		throttled:  kerr.CoordinatorNotAvailable.Code,
		auth:       kerr.TransactionalIDAuthorizationFailed.Code,
		badRequest: kerr.CoordinatorNotAvailable.Code,
		tooLarge:   kerr.CoordinatorNotAvailable.Code,
		protocol:   kerr.CoordinatorNotAvailable.Code,
		other:      kerr.CoordinatorNotAvailable.Code,
		prefix:     "queen: ",
	}
)

// throttledAs is r answering a 429 with code (and its throttle).
func (r faultRule) throttledAs(code int16) faultRule {
	r.throttled = code
	return r
}

// apply maps err by the rule: the code, the throttle a 429 carries, the
// sanitised reason for an error_message, and fatal (the canceled call
// itself) when the connection is going away and nothing is answered.
func (r faultRule) apply(err error) (code int16, throttle int32, msg string, fatal error) {
	msg = r.prefix + queenReason(err)
	switch queen.KindOf(err) {
	case queen.KindThrottled:
		ra, _ := queen.RetryAfter(err)
		return r.throttled, queen.ThrottleMillis(ra), msg, nil
	case queen.KindUnauthorized, queen.KindForbidden:
		return r.auth, 0, msg, nil
	case queen.KindBadRequest:
		return r.badRequest, 0, msg, nil
	case queen.KindTooLarge:
		return r.tooLarge, 0, msg, nil
	case queen.KindProtocol:
		return r.protocol, 0, msg, nil
	case queen.KindCanceled:
		if r.closeOnCancel {
			return 0, 0, msg, err
		}
	}
	return r.other, 0, msg, nil
}

// Mapping maps a failed Queen call to a partition's code, the throttle a
// 429 carries, and the sanitised reason; fatal (a canceled call) closes the
// connection instead. The data-path rules' apply methods are its values.
type Mapping func(err error) (code int16, throttle int32, msg string, fatal error)

// The data path's mappings, and the transaction APIs' catalogue reads
// (AddPartitionsToTxn, TxnOffsetCommit), by the rules above.
var (
	Produce     Mapping = produceRule.apply
	Fetch       Mapping = fetchRule.apply
	ListOffsets Mapping = listOffsetsRule.apply
	Transaction Mapping = txnRule.apply
)

// ProducerID maps a failed producer-id reservation (producerIDRule).
func ProducerID(err error) (code int16, throttle int32, fatal error) {
	code, throttle, _, fatal = producerIDRule.apply(err)
	return code, throttle, fatal
}

// TransactionCode maps a failed Queen call on a transaction API (txnRule).
func TransactionCode(err error) int16 {
	code, _, _, _ := txnRule.apply(err)
	return code
}

// Topic maps a failed Queen call on a topic API (topicRule).
func Topic(err error) (code int16, throttleMs int32, msg string) {
	code, throttleMs, msg, _ = topicRule.apply(err)
	return code, throttleMs, msg
}

// TopicWrite maps a topic write refused by Queen (topicWriteRule).
func TopicWrite(err error) (code int16, throttleMs int32, msg string) {
	code, throttleMs, msg, _ = topicWriteRule.apply(err)
	return code, throttleMs, msg
}

// ErrTopicRace is a create that lost the race for the topic record to a
// concurrent creator between its read and its write: that creator owns the
// topic, and Create answers TOPIC_ALREADY_EXISTS.
var ErrTopicRace = errors.New("topic record written concurrently")

// Create is TopicWrite for CreateTopics, with two answers of its
// own: a create that lost the race for the topic record to a concurrent
// creator is TOPIC_ALREADY_EXISTS, and from v6 (KIP-599) a throttled create
// is THROTTLING_QUOTA_EXCEEDED.
func Create(err error, version int16) (code int16, throttleMs int32, msg string) {
	code, throttleMs, msg = TopicWrite(err)
	switch {
	case errors.Is(err, ErrTopicRace):
		code = kerr.TopicAlreadyExists.Code
	case throttleMs > 0 && version >= 6:
		code = kerr.ThrottlingQuotaExceeded.Code
	}
	return code, throttleMs, msg
}

// SASL maps a failed credential check at SASL time (§0.2's SASL
// column, §2 "Errors"): 401/403 is SASL_AUTHENTICATION_FAILED with
// authRefusal's message. Anything else (Queen unreachable, a 429, a 5xx, a
// broken answer, a cancel) is no verdict on the token: ok is false and the
// connection closes with no answer, which every client retries, so that a
// Queen restart never makes a fleet give up on a right password.
func SASL(err error) (code int16, msg string, ok bool) {
	if !queen.IsAuth(err) {
		return 0, "", false
	}
	return kerr.SaslAuthenticationFailed.Code, authRefusal(err), true
}

// authRefusal is the error_message of a refused token. A 403 is a valid
// token without the read scope listing topics needs, which a client's
// operator must not take for a wrong password.
func authRefusal(err error) string {
	reason := queen.KindOf(err).String()
	var qe *queen.Error
	if errors.As(err, &qe) && qe.Message != "" {
		reason = qe.Message // already sanitised and cut by the client
	}
	if queen.KindOf(err) == queen.KindForbidden {
		return "Queen accepted this token but refused it the read scope (GET /api/v1/resources/queues needs read-only access or more); this is not a bad password: grant the token read access. Queen said (HTTP 403): " + reason
	}
	return "Queen refused this token (HTTP 401): the SASL PLAIN password must be a valid Queen bearer token. Queen said: " + reason
}

// PartitionOutcome reads one partition's push results (§5 "Facade
// reading"): every item stored, at contiguous offsets from the first
// (anything else is not a batch Kafka could have appended). `buffered` is
// REQUEST_TIMED_OUT, retriable with no offset yet; `error`/`failed`
// KAFKA_STORAGE_ERROR.
func PartitionOutcome(rs []queen.PushResult) (base int64, code int16, msg string) {
	for i, r := range rs {
		switch r.Status {
		case queen.StatusQueued, queen.StatusDuplicate:
		case queen.StatusBuffered:
			// Spooled durably but not yet stored: no offset exists.
			return -1, kerr.RequestTimedOut.Code, "queen buffered the write (maintenance mode); no offset yet"
		default:
			return -1, kerr.KafkaStorageError.Code, "queen could not store the write: status " + queen.Sanitize(r.Status)
		}
		if i == 0 {
			base = *r.Offset
		} else if *r.Offset != base+int64(i) {
			return -1, kerr.UnknownServerError.Code, "queen stored the batch at non-contiguous offsets"
		}
	}
	return base, 0, ""
}

// queenReason is the sanitised reason a Queen failure may show a client
// (§0.1): the body's message, or the error itself when there is none.
func queenReason(err error) string {
	var qe *queen.Error
	if errors.As(err, &qe) && qe.Message != "" {
		return queen.Sanitize(qe.Message)
	}
	if err == nil {
		return queen.KindNone.String()
	}
	return queen.Sanitize(err.Error())
}

// ErrorMessage is a response's error_message for code: the reason when
// the code is an error, null when it is not.
func ErrorMessage(code int16, msg string) *string {
	if code == 0 {
		return nil
	}
	return &msg
}

// Log records a failed data-path call for the operator on log (the
// connection's): a throttle is routine and only a debug line, anything
// else a warning, spaced per route and kind of failure (Warn).
func Log(log *slog.Logger, route string, err error) {
	if _, ok := queen.RetryAfter(err); ok {
		log.Debug("queen throttled a data-path call", "route", route, "err", err)
		return
	}
	kind := queen.KindOf(err).String()
	Warn(log, "data-path "+route+" "+kind, "queen data-path call failed", "route", route, "kind", kind, "err", err)
}

// WarnWindow is the least time between two lines of one repeated warning
// (Warn).
const WarnWindow = 10 * time.Second

// warns holds one ratelog.Every per key Warn was given: a fixed set (routes,
// kinds of failure, messages), never a topic or a client.
var warns sync.Map

// Warn logs a warning that every request may repeat while Queen fails (a
// data-path call, the topic list Metadata reads): the first of key's is
// logged, and those within WarnWindow after it are counted into one more
// line (ratelog.Every). Through an outage one producer logged 1,658 lines
// in 37 s; the count says as much in two (issue 20, item 13). key must come
// from a fixed set, never from a topic or a client.
func Warn(log *slog.Logger, key, msg string, args ...any) {
	l, ok := warns.Load(key)
	if !ok {
		l, _ = warns.LoadOrStore(key, &ratelog.Every{Window: WarnWindow})
	}
	l.(*ratelog.Every).Warn(log, time.Now(), msg, args...)
}
