package faults

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
	"github.com/queen-mq/queen-kafka/queen"
)

// faultAnswer is what a mapping answers for one failure.
type faultAnswer struct {
	code     int16
	throttle int32
	fatal    bool
}

// faultRoutes are the mappings of faults.go under the names the contract's
// tables use for them.
var faultRoutes = map[string]func(error) faultAnswer{
	"produce":     fromQueenFault(Produce),
	"fetch":       fromQueenFault(Fetch),
	"listoffsets": fromQueenFault(ListOffsets),
	"producerid": func(err error) faultAnswer {
		code, throttle, fatal := ProducerID(err)
		return faultAnswer{code, throttle, fatal != nil}
	},
	"metadata": func(err error) faultAnswer {
		code, throttle, _ := Topic(err)
		return faultAnswer{code, throttle, false}
	},
	"topicwrite": func(err error) faultAnswer {
		code, throttle, _ := TopicWrite(err)
		return faultAnswer{code, throttle, false}
	},
	"create-v5": func(err error) faultAnswer {
		code, throttle, _ := Create(err, 5)
		return faultAnswer{code, throttle, false}
	},
	"create-v6": func(err error) faultAnswer {
		code, throttle, _ := Create(err, 6)
		return faultAnswer{code, throttle, false}
	},
	"transaction": func(err error) faultAnswer { return faultAnswer{code: TransactionCode(err)} },
	// At SASL time a failure that is no verdict on the token closes the
	// connection unanswered: fatal here.
	"sasl": func(err error) faultAnswer {
		code, _, ok := SASL(err)
		return faultAnswer{code: code, fatal: !ok}
	},
}

func fromQueenFault(f Mapping) func(error) faultAnswer {
	return func(err error) faultAnswer {
		code, throttle, _, fatal := f(err)
		return faultAnswer{code, throttle, fatal != nil}
	}
}

func httpFault(kind queen.Kind, status int) error {
	return &queen.Error{Kind: kind, Route: "POST /api/v1/push", Status: status, Message: fmt.Sprintf("HTTP %d from the test", status)}
}

func throttled(retryAfter time.Duration) error {
	return &queen.Error{Kind: queen.KindThrottled, Route: "POST /api/v1/push", Status: 429, Message: "rate_limited", RetryAfter: retryAfter}
}

// TestQueenFaultTable is the contract's tables, row by row: queen-api.md
// §0.2 (one row per status, its "Facade reaction" per API), the per-route
// "Facade reading"/"Facade checks" paragraphs (§5 push, §6 fetch), and seed
// 001's "Throttling" table. Each case names the row it comes from.
func TestQueenFaultTable(t *testing.T) {
	const (
		none  = 0
		rto   = 7  // REQUEST_TIMED_OUT
		lna   = 5  // LEADER_NOT_AVAILABLE
		nlf   = 6  // NOT_LEADER_OR_FOLLOWER
		usErr = -1 // UNKNOWN_SERVER_ERROR
	)
	require.Equal(t, kerr.RequestTimedOut.Code, int16(rto))
	require.Equal(t, kerr.LeaderNotAvailable.Code, int16(lna))
	require.Equal(t, kerr.NotLeaderForPartition.Code, int16(nlf))
	require.Equal(t, kerr.UnknownServerError.Code, int16(usErr))

	type want map[string]faultAnswer
	authWant := want{
		"produce":     {code: kerr.TopicAuthorizationFailed.Code},
		"fetch":       {code: kerr.TopicAuthorizationFailed.Code},
		"listoffsets": {code: kerr.TopicAuthorizationFailed.Code},
		"producerid":  {code: kerr.ClusterAuthorizationFailed.Code},
		"metadata":    {code: kerr.TopicAuthorizationFailed.Code},
		"topicwrite":  {code: kerr.TopicAuthorizationFailed.Code},
		"create-v6":   {code: kerr.TopicAuthorizationFailed.Code},
		"transaction": {code: kerr.TransactionalIDAuthorizationFailed.Code},
		"sasl":        {code: kerr.SaslAuthenticationFailed.Code},
	}
	// refusal is a request Queen refused whole (400, 413): the same call
	// fails again, so every API answers a non-retriable code.
	refusal := func(produce int16) want {
		return want{
			"produce":     {code: produce},
			"fetch":       {code: usErr},
			"listoffsets": {code: usErr},
			"producerid":  {code: usErr},
			"metadata":    {code: kerr.InvalidRequest.Code},
			"topicwrite":  {code: kerr.InvalidRequest.Code},
			"create-v6":   {code: kerr.InvalidRequest.Code},
			// §8 "Facade checks": any other failure keeps the stage and
			// is retriable.
			"transaction": {code: kerr.CoordinatorNotAvailable.Code},
			"sasl":        {fatal: true},
		}
	}
	retriable := want{
		"produce":     {code: rto},
		"fetch":       {code: nlf},
		"listoffsets": {code: nlf},
		"producerid":  {code: kerr.CoordinatorLoadInProgress.Code},
		"metadata":    {code: lna},
		"topicwrite":  {code: lna},
		"create-v6":   {code: lna},
		"transaction": {code: kerr.CoordinatorNotAvailable.Code},
		"sasl":        {fatal: true},
	}
	rows := []struct {
		row  string
		err  error
		want want
	}{
		// §0.2 400: "Non-retriable error for that request".
		{"§0.2 400", httpFault(queen.KindBadRequest, 400), refusal(kerr.InvalidRecord.Code)},
		// §0.2 401/403: "data path: TOPIC_AUTHORIZATION_FAILED"; an
		// idempotent-write refusal is Kafka's CLUSTER_AUTHORIZATION_FAILED.
		{"§0.2 401", httpFault(queen.KindUnauthorized, 401), authWant},
		{"§0.2 403 (same mapping as 401)", httpFault(queen.KindForbidden, 403), authWant},
		// §0.2 413: "Non-retriable for that request"; a Java producer splits
		// a batch answered MESSAGE_TOO_LARGE.
		{"§0.2 413", httpFault(queen.KindTooLarge, 413), refusal(kerr.MessageTooLarge.Code)},
		// §0.2 429 and seed 001 "Throttling": throttle_time_ms is
		// Retry-After; Produce REQUEST_TIMED_OUT, Fetch error 0, Metadata
		// LEADER_NOT_AVAILABLE.
		{"§0.2 429 / seed 001 Throttling, Retry-After: 2", throttled(2 * time.Second), want{
			"produce":     {code: rto, throttle: 2000},
			"fetch":       {code: none, throttle: 2000},
			"metadata":    {code: lna, throttle: 2000},
			"listoffsets": {code: lna, throttle: 2000},
			"producerid":  {code: kerr.CoordinatorLoadInProgress.Code, throttle: 2000},
			"topicwrite":  {code: rto, throttle: 2000},
			"create-v5":   {code: rto, throttle: 2000},
			"create-v6":   {code: kerr.ThrottlingQuotaExceeded.Code, throttle: 2000},
			// §8: a 429 on a commit is retriable, never a throttle.
			"transaction": {code: kerr.CoordinatorNotAvailable.Code},
			"sasl":        {fatal: true},
		}},
		{"§0.2 429: 1000 when Retry-After is absent", throttled(0), want{
			"produce":  {code: rto, throttle: 1000},
			"fetch":    {code: none, throttle: 1000},
			"metadata": {code: lna, throttle: 1000},
		}},
		{"§0.2 429: clamped to 30 000", throttled(60 * time.Second), want{
			"produce":  {code: rto, throttle: 30000},
			"fetch":    {code: none, throttle: 30000},
			"metadata": {code: lna, throttle: 30000},
		}},
		// §0.2 408/502/503/504: a retriable code by API; 503 is never a
		// throttle, even carrying Retry-After: 1 (KV's). §0.2 500: "or a
		// retriable code by API". §0 client budgets: a call that never got
		// an answer is the same.
		{"§0.2 503 with Retry-After", &queen.Error{Kind: queen.KindTransient, Status: 503, RetryAfter: time.Second, Message: "kv_unavailable"}, retriable},
		{"§0.2 408", httpFault(queen.KindTransient, 408), retriable},
		{"§0.2 502", httpFault(queen.KindTransient, 502), retriable},
		{"§0.2 504", httpFault(queen.KindTransient, 504), retriable},
		{"§0.2 500", httpFault(queen.KindServer, 500), retriable},
		{"§0 transport failure", &queen.Error{Kind: queen.KindTransport, Message: "connection refused"}, retriable},
		{"§0 budget ran out", fmt.Errorf("push: %w", context.DeadlineExceeded), retriable},
		// §5 "queued without offset is an error", §6 "rejects a misaligned
		// answer": a 2xx that broke the contract.
		{"§5/§6 answer broke the contract", &queen.Error{Kind: queen.KindProtocol, Status: 200, Message: "item 3 missing"}, want{
			"produce":     {code: usErr},
			"fetch":       {code: usErr},
			"listoffsets": {code: usErr},
			"producerid":  {code: kerr.CoordinatorLoadInProgress.Code},
			"metadata":    {code: lna},
			"topicwrite":  {code: lna},
			"transaction": {code: kerr.CoordinatorNotAvailable.Code},
			"sasl":        {fatal: true},
		}},
		// §8: a unit rolled back for a reason other than its fence.
		{"§8 rolled back (db_error)", &queen.TxnError{Reason: "db_error", Message: "deadlock"}, want{
			"transaction": {code: kerr.CoordinatorNotAvailable.Code},
		}},
		// The connection going away: a data-path call is not answered; a
		// topic API answers it like any failure.
		{"canceled call", fmt.Errorf("push: %w", context.Canceled), want{
			"produce":     {fatal: true},
			"fetch":       {fatal: true},
			"listoffsets": {fatal: true},
			"producerid":  {fatal: true},
			"metadata":    {code: lna},
			"topicwrite":  {code: lna},
			"transaction": {code: kerr.CoordinatorNotAvailable.Code},
			"sasl":        {fatal: true},
		}},
		// A CreateTopics that lost the topic record to a concurrent creator.
		{"CreateTopics record race", ErrTopicRace, want{
			"create-v5": {code: kerr.TopicAlreadyExists.Code},
			"create-v6": {code: kerr.TopicAlreadyExists.Code},
		}},
	}
	for _, r := range rows {
		for route, w := range r.want {
			f, ok := faultRoutes[route]
			require.True(t, ok, "row %q names unknown route %q", r.row, route)
			got := f(r.err)
			require.Equal(t, w, got, "%s, %s: want %s throttle %d fatal %v, got %s throttle %d fatal %v",
				r.row, route, kerr.ErrorForCode(w.code), w.throttle, w.fatal, kerr.ErrorForCode(got.code), got.throttle, got.fatal)
		}
	}
}

// TestQueenFaultMessages is §0.1: bodies reach a Kafka error_message only
// sanitised and cut to 256 characters; the data path names Queen as the
// source, the topic APIs give Queen's reason as it is.
func TestQueenFaultMessages(t *testing.T) {
	err := &queen.Error{Kind: queen.KindForbidden, Status: 403, Message: "Insufficient \x1b[31mpermissions\x1b[0m"}
	for name, f := range map[string]Mapping{"produce": Produce, "fetch": Fetch, "listoffsets": ListOffsets} {
		_, _, msg, _ := f(err)
		require.Equal(t, "queen: Insufficient permissions", msg, name)
	}
	for name, f := range map[string]func(error) (int16, int32, string){"metadata": Topic, "topicwrite": TopicWrite} {
		_, _, msg := f(err)
		require.Equal(t, "Insufficient permissions", msg, name)
	}
	// No body message: the error itself, sanitised.
	_, _, msg, _ := Produce(errors.New("dial tcp: \x07refused"))
	require.Equal(t, "queen: dial tcp: refused", msg)
	long := &queen.Error{Kind: queen.KindServer, Status: 500, Message: fmt.Sprintf("%0300d", 0)}
	_, _, msg = Topic(long)
	require.Len(t, msg, 256)

	// SASL (§2 "Errors"): Queen's reason (sanitised by the client already,
	// which built the error), and a 403 told apart from a bad password.
	_, msg, _ = SASL(&queen.Error{Kind: queen.KindForbidden, Status: 403, Message: "Insufficient permissions"})
	require.Contains(t, msg, "read scope")
	require.Contains(t, msg, "Queen said (HTTP 403): Insufficient permissions")
	_, msg, _ = SASL(&queen.Error{Kind: queen.KindUnauthorized, Status: 401, Message: "bad token"})
	require.Equal(t, "Queen refused this token (HTTP 401): the SASL PLAIN password must be a valid Queen bearer token. Queen said: bad token", msg)

	require.Nil(t, ErrorMessage(0, "ignored"))
	require.Equal(t, "why", *ErrorMessage(kerr.InvalidRequest.Code, "why"))
}

// TestPushOutcomeTable is §5 "Facade reading": queued and duplicate items
// stored at contiguous offsets are the batch's base, anything else an
// error; buffered REQUEST_TIMED_OUT with no offset;
// error/failed an error for that partition.
func TestPushOutcomeTable(t *testing.T) {
	at := func(o int64) *int64 { return &o }
	rows := []struct {
		row  string
		rs   []queen.PushResult
		base int64
		code int16
	}{
		{"queued, contiguous", []queen.PushResult{{Status: queen.StatusQueued, Offset: at(41)}, {Status: queen.StatusQueued, Offset: at(42)}}, 41, 0},
		{"duplicate keeps its offset", []queen.PushResult{{Status: queen.StatusDuplicate, Offset: at(7)}, {Status: queen.StatusQueued, Offset: at(8)}}, 7, 0},
		{"non-contiguous", []queen.PushResult{{Status: queen.StatusQueued, Offset: at(41)}, {Status: queen.StatusQueued, Offset: at(43)}}, -1, kerr.UnknownServerError.Code},
		{"buffered", []queen.PushResult{{Status: queen.StatusQueued, Offset: at(1)}, {Status: queen.StatusBuffered}}, -1, kerr.RequestTimedOut.Code},
		{"failed", []queen.PushResult{{Status: queen.StatusFailed}}, -1, kerr.KafkaStorageError.Code},
		{"error", []queen.PushResult{{Status: queen.StatusError}}, -1, kerr.KafkaStorageError.Code},
	}
	for _, r := range rows {
		base, code, msg := PartitionOutcome(r.rs)
		require.Equal(t, r.code, code, r.row)
		require.Equal(t, r.base, base, r.row)
		require.Equal(t, code != 0, msg != "", r.row)
	}
}

// A data-path failure repeated at every request logs its first warning and
// then at most one line per window counting the rest, per route (issue 20
// item 13: one producer logged 1,658 WARN lines in 37 s of a Queen outage).
func TestLogSpacesRepeatedWarnings(t *testing.T) {
	var out testsupport.LogBuffer
	log := slog.New(slog.NewTextHandler(&out, nil))
	down := &queen.Error{Kind: queen.KindTransient, Route: "POST /api/v1/push", Status: 503, Message: "down"}
	run := fmt.Sprint(time.Now().UnixNano()) // routes of their own: the spacing outlives a test run
	for range 1000 {
		Log(log, "push-"+run, down)
		Log(log, "fetch-"+run, down)
	}
	if got := strings.Count(out.String(), "level=WARN"); got != 2 {
		t.Fatalf("%d WARN lines for 1000 failures on each of two routes, want one per route:\n%s", got, out.String())
	}
}
