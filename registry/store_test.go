package registry

import (
	"testing"

	"github.com/queen-mq/queen-kafka/internal/testsupport/devbroker"
	"github.com/queen-mq/queen-kafka/queen/dev"
)

// newStore is the memory-only dev broker behind a real HTTP server, with the
// fake clock as its Now, reached through the real Queen client: the
// registry's calls cross the same wire and validation a facade's do.
func newStore(t *testing.T, clk *fakeClock) KV {
	t.Helper()
	return devbroker.Start(t, dev.Options{Now: clk.Now}, nil).Client
}
