package transport

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queen-mq/queen-kafka/internal/idlesweep"
	"github.com/queen-mq/queen-kafka/internal/testsupport"
	"github.com/queen-mq/queen-kafka/internal/testsupport/devbroker"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/queen/dev"
)

// TestIdleIdentitiesAreForgotten: a credential's answer unused for
// idleIdentity is forgotten when another credential is asked about, and
// asked again if it comes back; one being asked is never dropped.
func TestIdleIdentitiesAreForgotten(t *testing.T) {
	q := devQueenClient(t)
	clk := testsupport.NewFakeClock(time.Unix(1_800_000_000, 0))
	ids := newIdentities()
	ids.now = clk.Now
	asking := &identityAsk{done: make(chan struct{})}
	ids.m[credentialKey("", "asking")] = asking
	_, err := ids.identity(context.Background(), q, credentialKey("", "old"), testLogger())
	require.NoError(t, err)

	clk.Advance(idleIdentity + idlesweep.Every)
	_, err = ids.identity(context.Background(), q, credentialKey("", "new"), testLogger())
	require.NoError(t, err)
	ids.mu.Lock()
	defer ids.mu.Unlock()
	require.NotContains(t, ids.m, credentialKey("", "old"), "idle: forgotten")
	require.Contains(t, ids.m, credentialKey("", "new"))
	require.Same(t, asking, ids.m[credentialKey("", "asking")], "an ask under way stays")
}

// devQueenClient is a Queen client of an in-process dev broker.
func devQueenClient(t *testing.T) *queen.Client {
	b := devbroker.Start(t, dev.Options{Logger: testLogger()}, nil)
	q, err := queen.New(queen.Config{URL: b.URL})
	require.NoError(t, err)
	return q
}

func testLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
