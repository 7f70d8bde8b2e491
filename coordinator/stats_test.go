package coordinator

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStatsCountsStatesMembersAndRebalances: every state is reported, each
// group under the state it is in with its members, and a rebalance is a
// join completed with members.
func TestStatsCountsStatesMembersAndRebalances(t *testing.T) {
	h := newHarness(t, nil)
	counts := func() map[string][2]int {
		out := map[string][2]int{}
		for _, s := range h.c.Stats().States {
			out[s.State] = [2]int{s.Groups, s.Members}
		}
		return out
	}
	require.Equal(t, map[string][2]int{"Empty": {}, "PreparingRebalance": {}, "CompletingRebalance": {}, "Stable": {}, "Dead": {}}, counts())
	require.Zero(t, h.c.Stats().Rebalances)

	j := recv(t, h.joinAsync(joinReq(3, "g", "")))
	require.Zero(t, j.ErrorCode)
	require.Equal(t, [2]int{1, 1}, counts()["CompletingRebalance"])
	require.Equal(t, uint64(1), h.c.Stats().Rebalances)

	s := h.c.SyncGroup(context.Background(), h.cl, syncReq("g", j.MemberID, 1, map[string]string{j.MemberID: "a"}))
	require.Zero(t, s.ErrorCode)
	require.Equal(t, [2]int{1, 1}, counts()["Stable"])
	require.Equal(t, [2]int{}, counts()["CompletingRebalance"])

	// A second member: the group rebalances again, now with two.
	second := h.joinAsync(joinReq(3, "g", ""))
	require.Equal(t, [2]int{1, 2}, counts()["PreparingRebalance"], "the newcomer is a member, waiting for the first to rejoin")
	rejoin := recv(t, h.joinAsync(joinReq(3, "g", j.MemberID)))
	require.Zero(t, rejoin.ErrorCode)
	require.Zero(t, recv(t, second).ErrorCode)
	require.Equal(t, [2]int{1, 2}, counts()["CompletingRebalance"])
	require.Equal(t, uint64(2), h.c.Stats().Rebalances)
}
