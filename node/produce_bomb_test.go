package node

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen/dev"
	"github.com/queen-mq/queen-kafka/recordbatch"
	"github.com/queen-mq/queen-kafka/recordbatch/batchtest"
	"github.com/queen-mq/queen-kafka/transport"
)

// The served side of the decode budget (package recordbatch tests the
// codec's own bound): a bomb is refused by the produce path with the code
// and reason a broker gives, writes nothing, and leaves the process budget
// whole, and a produce waits for the budget bounded by its context.

// TestProduceBombsCostAFrame: compression buys a client no more room than
// it already had (seed 000, "Decompressed produce batch"). A gzip batch of
// 300 MiB of zeros and a zstd batch of a million empty records are refused
// MESSAGE_TOO_LARGE by the facade itself, and refusing them allocates a
// small multiple of one frame, not of what they expand to. The bounds are
// generous: the decoder before the budget allocated about 500 MiB for the
// first (append's 1.25x steps up to the ceiling) and ~400 MiB for the
// second (envelopes, push items and a body that Queen then refused).
func TestProduceBombsCostAFrame(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, nil)
	e.createTopic("bombs")
	gz, zs := batchtest.GzipZerosBomb(t), batchtest.EmptyRecordsBomb(t)

	var p kmsg.ProduceResponseTopicPartition
	alloc := batchtest.AllocatedBy(func() { p = e.produce("bombs", 0, gz) })
	require.Equal(t, kerr.MessageTooLarge.Code, p.ErrorCode)
	require.Contains(t, *p.ErrorMessage, "decompresses past")
	t.Logf("gzip bomb (%d bytes): %d MiB allocated", len(gz), alloc>>20)
	require.Less(t, alloc, uint64(transport.MaxFrame)*5/2, "refusing a gzip bomb allocated %d MiB", alloc>>20)

	alloc = batchtest.AllocatedBy(func() { p = e.produce("bombs", 0, zs) })
	require.Equal(t, kerr.MessageTooLarge.Code, p.ErrorCode)
	require.Contains(t, *p.ErrorMessage, "records cost past")
	t.Logf("zstd empty-records bomb (%d bytes): %d MiB allocated", len(zs), alloc>>20)
	require.Less(t, alloc, uint64(transport.MaxFrame)*3/2, "refusing a many-records bomb allocated %d MiB", alloc>>20)

	res, _ := e.stored("bombs", 0)
	require.Equal(t, int64(0), res.HighWatermark, "nothing of a bomb is written")
	require.Equal(t, decodeBudget.Size(), decodeBudget.Free(), "every claim was given back")

	// An ordinary compressed batch still goes through.
	require.Equal(t, int16(0), e.produce("bombs", 0, batchtest.Batch{Codec: recordbatch.CodecZstd, FirstTS: 1, Records: batchtest.SampleRecords()}.Encode(t)).ErrorCode)
}

// TestProduceBombsShareOneBudget: concurrent bombs on several connections
// are each refused, and at no moment hold more than the process budget
// between them; the budget is whole again afterwards. Half are many-records
// bombs, whose refused record cost is taken back: a restart must still
// wait for more than they reached, or two of them retry forever.
func TestProduceBombsShareOneBudget(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, nil)
	e.createTopic("bombs")
	bombs := [][]byte{batchtest.GzipZerosBomb(t), batchtest.EmptyRecordsBomb(t)}
	decodeBudget.ResetPeak()
	var wg sync.WaitGroup
	codes := make([]int16, 4)
	for i := range codes {
		c := e.conn(e.n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			resp, err := e.n.handleProduce(ctx, c, produceReq(9, -1, "bombs", 0, bombs[i%2]))
			if err == nil {
				codes[i] = resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
			}
		}()
	}
	wg.Wait()
	for i, code := range codes {
		require.Equal(t, kerr.MessageTooLarge.Code, code, "bomb %d", i)
	}
	require.LessOrEqual(t, decodeBudget.Peak(), decodeBudget.Size())
	require.Greater(t, decodeBudget.Peak(), int64(transport.MaxFrame), "the bombs did reach the ceiling")
	require.Equal(t, decodeBudget.Size(), decodeBudget.Free())
}

// TestProduceWaitsForDecodeBudget: a request that finds the budget taken
// waits for it rather than failing, and gives up only with its context.
func TestProduceWaitsForDecodeBudget(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, nil)
	e.createTopic("orders")
	good := batchtest.Batch{Codec: recordbatch.CodecGzip, FirstTS: 1, Records: batchtest.SampleRecords()}.Encode(t)
	require.True(t, decodeBudget.TryAcquire(decodeBudget.Size()), "budget idle at the start")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := e.n.handleProduce(ctx, e.c, produceReq(9, -1, "orders", 0, good))
	require.ErrorIs(t, err, context.Canceled, "waits, bounded by its context")

	done := make(chan kmsg.ProduceResponseTopicPartition, 1)
	go func() {
		resp, err := e.n.handleProduce(context.Background(), e.c, produceReq(9, -1, "orders", 0, good))
		if err == nil {
			done <- resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		}
		close(done)
	}()
	require.Eventually(t, func() bool { return decodeBudget.Waiting() == 1 }, 10*time.Second, time.Millisecond, "queued for the budget")
	require.Empty(t, done, "answered while the budget was taken")
	decodeBudget.Release(decodeBudget.Size())
	p, ok := <-done
	require.True(t, ok, "the waiting request failed")
	require.Equal(t, int16(0), p.ErrorCode)
	require.Equal(t, int64(0), p.BaseOffset)
	require.Equal(t, decodeBudget.Size(), decodeBudget.Free())
}

// decodeBudget is the process-wide budget every produce request decodes on.
var decodeBudget = decoding.Budget()
