package node

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestClusterTxnCapsPerNodeAndPerTransaction: seed 000's transaction caps
// in cluster mode (issue 9), where one transaction's records are staged by
// several nodes. A node refuses a batch past what it staged of the
// transaction (MESSAGE_TOO_LARGE, and its x: mark keeps the owner from
// committing); the owner refuses a commit whose stage, summed over every
// node, is past the cap though no node alone was (INVALID_TXN_STATE);
// neither writes a record, and the abort is accepted. Open transactions
// are capped per owner node, not per cluster. Each case has a transactional
// id of its own: a staging node's cached row of an id is behind the
// owner's next transaction until a write reads it back (see the issue 9
// note), which these cases do not exercise.
func TestClusterTxnCapsPerNodeAndPerTransaction(t *testing.T) {
	e := newClusterTxnEnv(t, map[string]string{"QUEEN_KAFKA_TXN_MAX_RECORDS": "3", "QUEEN_KAFKA_TXN_MAX_OPEN": "1"})
	e.fq.addQueue("out", 2)
	live := []int32{1, 2, 3}
	owner, n2, n3 := e.k[0], e.k[1], e.k[2]

	// Per node: node 2 stages three records, the fourth is refused there,
	// though node 3 could still stage for the same transaction.
	a := mustInitTxn(t, owner, groupOwnedBy(t, live, 1, "txcap-a"))
	a.mustAdd(owner, "out", 0, 1)
	a.mustProduce(n2, "out", 0, "a1", "a2", "a3")
	code, _ := a.produce(n2, "out", 0, "a4")
	require.Equal(t, kerr.MessageTooLarge.Code, code, "the 4th record node 2 stages of one transaction")
	a.mustProduce(n3, "out", 1, "a5")
	require.Equal(t, kerr.InvalidTxnState.Code, a.end(owner, true), "a commit of a transaction a node refused in part")
	require.Empty(t, e.values(t, "out", 0))
	require.Empty(t, e.values(t, "out", 1))
	require.Equal(t, int16(0), a.end(owner, false))

	// Per transaction: two records at node 2 and two at node 3, each node
	// under the cap, the transaction over it.
	b := mustInitTxn(t, owner, groupOwnedBy(t, live, 1, "txcap-b"))
	b.mustAdd(owner, "out", 0, 1)
	b.mustProduce(n2, "out", 0, "b1", "b2")
	b.mustProduce(n3, "out", 1, "b3", "b4")
	require.Equal(t, kerr.InvalidTxnState.Code, b.end(owner, true), "a commit of 4 records staged by two nodes, cap 3")
	require.Empty(t, e.values(t, "out", 0))
	require.Empty(t, e.values(t, "out", 1))
	require.Equal(t, int16(0), b.end(owner, false))

	// QUEEN_KAFKA_TXN_MAX_OPEN=1 per owner: with a transaction open at
	// node 1, a second id owned by node 1 cannot open one; an id owned by
	// node 2 can, and its transaction, within the caps, lands.
	a.mustAdd(owner, "out", 0)
	c := mustInitTxn(t, owner, groupOwnedBy(t, live, 1, "txcap-c"))
	require.Equal(t, []int16{kerr.MessageTooLarge.Code}, c.add(owner, "out", 1), "a second open transaction at its owner")
	d := mustInitTxn(t, n2, groupOwnedBy(t, live, 2, "txcap-d"))
	d.mustAdd(n2, "out", 0, 1)
	d.mustProduce(n3, "out", 0, "d1", "d2")
	d.mustProduce(owner, "out", 1, "d3")
	require.Equal(t, int16(0), d.end(n2, true))
	require.Equal(t, []string{"d1", "d2"}, e.values(t, "out", 0))
	require.Equal(t, []string{"d3"}, e.values(t, "out", 1))
	require.Equal(t, int16(0), a.end(owner, false))
}
