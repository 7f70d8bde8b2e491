package testsupport

import (
	"testing"
	"time"
)

// WaitFor polls cond in real time until it holds, failing t when limit
// passes first: for what goroutines under test do on their own time.
func WaitFor(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", limit, what)
		}
		time.Sleep(time.Millisecond)
	}
}
