package node

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
)

// TestIdleIdentitiesAreForgotten: a credential's answer unused for
// idleIdentity is forgotten when another credential is asked about, and
// asked again if it comes back; one being asked is never dropped.
func TestIdleIdentitiesAreForgotten(t *testing.T) {
	dq, _ := newDevQueen(t)
	clk := testsupport.NewFakeClock(time.Unix(1_800_000_000, 0))
	ids := newIdentities()
	ids.now = clk.Now
	asking := &identityAsk{done: make(chan struct{})}
	ids.m[credentialKey("", "asking")] = asking
	_, err := ids.identity(context.Background(), dq.q, credentialKey("", "old"), testLogger())
	require.NoError(t, err)

	clk.Advance(idleIdentity + idleSweepEvery)
	_, err = ids.identity(context.Background(), dq.q, credentialKey("", "new"), testLogger())
	require.NoError(t, err)
	ids.mu.Lock()
	defer ids.mu.Unlock()
	require.NotContains(t, ids.m, credentialKey("", "old"), "idle: forgotten")
	require.Contains(t, ids.m, credentialKey("", "new"))
	require.Same(t, asking, ids.m[credentialKey("", "asking")], "an ask under way stays")
}
