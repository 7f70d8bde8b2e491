package node

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queen-mq/queen-kafka/coordinator"
)

// TestIdentitySharesFollowSASL: without SASL every client is filed under
// the one identity "", so the bounds shared per identity (the group
// ceiling, the parked fetch calls) are whole to it; with SASL each
// credential's identity holds its quarter. A quarter without SASL would
// cap a deployment at 2,500 consumer groups.
func TestIdentitySharesFollowSASL(t *testing.T) {
	_, url := newDevQueen(t)
	for _, tc := range []struct {
		sasl           string
		groups, parked int
	}{
		{"", coordinator.DefaultMaxGroups, 1024},
		{"plain", coordinator.DefaultMaxGroups / 4, 256},
	} {
		n := newNodeOn(t, url, map[string]string{"QUEEN_KAFKA_SASL": tc.sasl})
		ceiling, share := n.coord.Ceiling()
		require.Equal(t, coordinator.DefaultMaxGroups, ceiling)
		require.Equal(t, tc.groups, share, "SASL %q: one identity's groups", tc.sasl)
		require.Equal(t, tc.parked, n.parked.Share(), "SASL %q: one identity's parked calls", tc.sasl)
	}
}
