package node

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/queen-mq/queen-kafka/queen"
)

// An EndTxn(abort) (v0-3) whose write of the qk:txn: row loses its
// compare-and-set to another node's write for the same producer (the id
// moved and moved back, both owners served it for a moment) did not land:
// the row still holds the transaction open with its stage in Queen, and
// the next node to load it carries the aborted records into the producer's
// next transaction. It is answered NOT_COORDINATOR, and the client's retry
// at the owner, which loads the row afresh, aborts it. Before, the abort
// was answered 0 with the row left open, and the next transaction's commit
// made the aborted record visible with its own: TestChaosTxn seed
// 1796494024167168241, a librdkafka worker's aborted transaction of 40
// records visible (an aborted read) after node 1 restarted.
func TestClusterTxnAbortThatLostTheRowIsRetried(t *testing.T) {
	e := newClusterTxnEnv(t)
	e.fq.addQueue("out", 1)
	id := groupOwnedBy(t, []int32{1, 2, 3}, 2, "txab")
	owner, other := e.k[1], e.k[0]
	x := mustInitTxn(t, owner, id)
	x.mustAdd(owner, "out", 0)
	x.mustProduce(other, "out", 0, "aborted")

	// Another node writes the row for the same producer: the owner's
	// version of it is stale.
	ctx := context.Background()
	key := queen.TxnKey(id)
	res, err := e.fq.q.KV(ctx, []queen.KVOp{{Op: queen.OpGetMany, NS: queen.Namespace, Keys: []string{key}}})
	require.NoError(t, err)
	require.Len(t, res[0].Rows, 1)
	_, err = e.fq.q.KV(ctx, []queen.KVOp{{Op: queen.OpPut, NS: queen.Namespace, Key: key, Value: res[0].Rows[0].Value, Forever: true}})
	require.NoError(t, err)

	code := x.end(owner, false)
	for i := 0; code == kerr.NotCoordinator.Code && i < 3; i++ {
		code = x.end(owner, false) // the client finds the coordinator again and retries
	}
	require.Equal(t, int16(0), code, "the abort, retried")

	codes := x.add(owner, "out", 0)
	for i := 0; codes[0] == kerr.NotCoordinator.Code && i < 3; i++ {
		codes = x.add(owner, "out", 0) // as a client retries it
	}
	require.Equal(t, []int16{0}, codes, "AddPartitionsToTxn of the next transaction")
	x.mustProduce(other, "out", 0, "next")
	require.Equal(t, int16(0), x.end(owner, true))
	require.Equal(t, []string{"next"}, e.values(t, "out", 0), "the aborted record is not committed with the next transaction")
}
