package devbroker

import (
	"net/http"
	"testing"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/queen/dev"
)

// Broker is a dev broker served for one test.
type Broker struct {
	*dev.Broker
	URL    string        // the httptest server's base URL
	Client *queen.Client // a Queen client on URL, without a token
}

// Start builds a dev broker from opts and serves it until t ends. The
// sweeper is off unless opts.SweepInterval is positive (tests sweep when
// they mean to). wrap, when not nil, wraps the broker's handler: for a test
// that counts or records requests, or answers some itself (a synthetic
// fault, a gate). At the end the server closes first, then the broker.
func Start(t testing.TB, opts dev.Options, wrap func(http.Handler) http.Handler) *Broker {
	t.Helper()
	if opts.SweepInterval <= 0 {
		opts.SweepInterval = -1
	}
	b, err := dev.New(opts)
	if err != nil {
		t.Fatalf("dev broker: %v", err)
	}
	var h http.Handler = b.Handler()
	if wrap != nil {
		h = wrap(h)
	}
	srv := testsupport.Serve(t, h, func() { _ = b.Close() })
	c, err := queen.New(queen.Config{URL: srv.URL})
	if err != nil {
		t.Fatalf("queen client: %v", err)
	}
	return &Broker{Broker: b, URL: srv.URL, Client: c}
}
