package supervisor

import "github.com/queen-mq/queen-kafka/internal/clock"

// Clock is the supervisor's only source of time: the restart backoff, the
// hour after which it resets, the stop grace and the log budget window all
// read it, so tests advance a fake one instead of sleeping.
type Clock = clock.Clock
