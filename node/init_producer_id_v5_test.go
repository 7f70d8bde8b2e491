package node

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen/dev"
)

// TestKgoInitProducerIDv5: franz-go's idempotent and transactional
// producers at InitProducerId v4 and v5 produce and commit alike (v5 only
// admits TRANSACTION_ABORTABLE, never answered).
func TestKgoInitProducerIDv5(t *testing.T) {
	e, addr, obs := servedEnv(t, dev.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e.createTopic("ipid")
	for v := int16(4); v <= 5; v++ {
		mark := obs.mark()
		idem := pinnedClient(t, addr, kmsg.InitProducerID, v, kgo.DefaultProduceTopic("ipid"))
		require.NoError(t, idem.ProduceSync(ctx, &kgo.Record{Value: []byte("idempotent")}).FirstErr())
		idem.Close()

		txn := pinnedClient(t, addr, kmsg.InitProducerID, v, kgo.DefaultProduceTopic("ipid"),
			kgo.TransactionalID("ipid-txn"), kgo.TransactionTimeout(30*time.Second))
		require.NoError(t, txn.BeginTransaction())
		require.NoError(t, txn.ProduceSync(ctx, &kgo.Record{Value: []byte("transactional")}).FirstErr())
		require.NoError(t, txn.EndTransaction(ctx, kgo.TryCommit))
		txn.Close()

		require.Equal(t, []int16{v}, obs.versionsSeen(kmsg.InitProducerID, mark), "negotiated version")
		for _, r := range obs.requests()[mark:] {
			require.Equal(t, int16(0), r.code, "%s v%d answered %v", kmsg.NameForKey(r.key), r.version, kerr.ErrorForCode(r.code))
		}
	}
}

// TestInitProducerIDv5FencesAsV4: a stale epoch of a transactional id is
// PRODUCER_FENCED at v4 and v5 alike, INVALID_PRODUCER_EPOCH below.
func TestInitProducerIDv5FencesAsV4(t *testing.T) {
	e := newTxnEnv(t, nil)
	k := dial(t, e.addr)
	init := func(v int16, pid int64, epoch int16) *kmsg.InitProducerIDResponse {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.Version, req.TransactionalID, req.TransactionTimeoutMillis = v, kmsg.StringPtr("fence-v5"), 30_000
		req.ProducerID, req.ProducerEpoch = pid, epoch
		return k.roundTrip(req).(*kmsg.InitProducerIDResponse)
	}
	first := init(5, -1, -1)
	require.Equal(t, int16(0), first.ErrorCode)
	second := init(5, -1, -1)
	require.Equal(t, int16(0), second.ErrorCode)
	require.Equal(t, first.ProducerID, second.ProducerID)
	require.Greater(t, second.ProducerEpoch, first.ProducerEpoch)
	for v, want := range map[int16]int16{3: kerr.InvalidProducerEpoch.Code, 4: kerr.ProducerFenced.Code, 5: kerr.ProducerFenced.Code} {
		require.Equal(t, want, init(v, first.ProducerID, first.ProducerEpoch).ErrorCode, "v%d stale epoch", v)
	}
}
