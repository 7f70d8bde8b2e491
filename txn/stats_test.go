package txn

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestStatsCountOpenCommittedAborted: a transaction is open from its first
// partition to its EndTxn, and each end is counted once under its outcome;
// a repeated EndTxn of a decided one is not another transaction.
func TestStatsCountOpenCommittedAborted(t *testing.T) {
	h := newHarness(t, Limits{})
	require.Equal(t, Stats{}, h.m.Stats())
	pid, epoch := h.init(h.m, h.cl, "tx")
	h.add(h.m, h.cl, "tx", pid, epoch, "out", 0)
	h.produce(h.m, h.cl, batch("tx", pid, epoch, "out", 0, "a", 2))
	require.Equal(t, Stats{Open: 1}, h.m.Stats())
	require.Zero(t, h.end(h.m, h.cl, "tx", pid, epoch, true))
	require.Zero(t, h.end(h.m, h.cl, "tx", pid, epoch, true), "a repeated commit")
	require.Equal(t, Stats{Committed: 1}, h.m.Stats())

	h.add(h.m, h.cl, "tx", pid, epoch, "out", 0)
	require.Equal(t, Stats{Open: 1, Committed: 1}, h.m.Stats())
	require.Zero(t, h.end(h.m, h.cl, "tx", pid, epoch, false))
	require.Zero(t, h.end(h.m, h.cl, "tx", pid, epoch, false), "a repeated abort")
	require.Equal(t, kerr.InvalidTxnState.Code, h.end(h.m, h.cl, "tx", pid, epoch, true), "a commit after the abort")
	require.Equal(t, Stats{Committed: 1, Aborted: 1}, h.m.Stats())
}
