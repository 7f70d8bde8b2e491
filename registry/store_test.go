package registry

import (
	"net/http/httptest"
	"testing"

	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/queen/dev"
)

// newStore is the memory-only dev broker behind a real HTTP server, with the
// fake clock as its Now, reached through the real Queen client: the
// registry's calls cross the same wire and validation a facade's do.
func newStore(t *testing.T, clk *fakeClock) KV {
	t.Helper()
	b, err := dev.New(dev.Options{Now: clk.Now, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(b.Handler())
	t.Cleanup(func() {
		srv.Close()
		_ = b.Close()
	})
	c, err := queen.New(queen.Config{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
