package registry

import (
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
)

// fakeClock drives heartbeats and the boot watch; the store's expiry reads
// the same Now, so "one TTL later" means the same instant to both.
type fakeClock = testsupport.FakeClock

func newFakeClock() *fakeClock {
	return testsupport.NewFakeClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
}

// waitFor polls cond in real time (bounded) until it holds: the goroutines
// under test run real HTTP calls between fake-clock steps.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testsupport.WaitFor(t, 10*time.Second, what, cond)
}
