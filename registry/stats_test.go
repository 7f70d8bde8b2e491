package registry

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStatsCountHeartbeatsByOutcome: the claim and every heartbeat are
// counted once under their outcome, and health and the live set follow.
func TestStatsCountHeartbeatsByOutcome(t *testing.T) {
	h, f, a := startFaulty(t)
	st := a.Stats()
	require.Equal(t, Stats{LiveNodes: 1, LastOK: st.LastOK, HeartbeatsOK: 1, Healthy: true}, st, "the claim")
	require.False(t, st.LastOK.IsZero())
	claimed := st.LastOK

	h.tick(1)
	st = a.Stats()
	require.Equal(t, uint64(2), st.HeartbeatsOK)
	require.True(t, st.LastOK.After(claimed))

	f.mode.Store(faultFail)
	h.tick(1)
	st = a.Stats()
	require.Equal(t, [2]uint64{2, 1}, [2]uint64{st.HeartbeatsOK, st.HeartbeatsFailed})
	require.False(t, st.Healthy)

	f.mode.Store(faultNone)
	h.tick(1)
	st = a.Stats()
	require.Equal(t, [2]uint64{3, 1}, [2]uint64{st.HeartbeatsOK, st.HeartbeatsFailed})
	require.True(t, st.Healthy)
	require.False(t, st.Lost)
}
