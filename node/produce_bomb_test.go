package node

import (
	"bytes"
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen/dev"
)

// bombBatch is a batch of n records whose body is records, compressed.
func bombBatch(codec int, body []byte, n int32) []byte {
	rb := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, Attributes: int16(codec), LastOffsetDelta: n - 1,
		FirstTimestamp: 1, MaxTimestamp: 1, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: n, Records: body}
	return sealBatch(rb.AppendTo(nil))
}

// gzipZerosBomb is 300 MiB of zeros in a few hundred KiB of gzip.
func gzipZerosBomb(t testing.TB) []byte {
	var b bytes.Buffer
	w, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	require.NoError(t, err)
	zeros := make([]byte, 1<<20)
	for range 300 {
		_, _ = w.Write(zeros)
	}
	require.NoError(t, w.Close())
	return bombBatch(codecGzip, b.Bytes(), 1)
}

// emptyRecordsBomb is a million empty records in under a MiB of zstd.
func emptyRecordsBomb(t testing.TB) []byte {
	const n = 1_000_000
	var raw []byte
	for i := range n {
		raw = appendRecord(raw, &kmsg.Record{OffsetDelta: int32(i)})
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
	require.NoError(t, err)
	return bombBatch(codecZstd, enc.EncodeAll(raw, nil), n)
}

// allocatedBy is what f allocated, in bytes, across the process.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

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
	gz, zs := gzipZerosBomb(t), emptyRecordsBomb(t)

	var p kmsg.ProduceResponseTopicPartition
	alloc := allocatedBy(func() { p = e.produce("bombs", 0, gz) })
	require.Equal(t, kerr.MessageTooLarge.Code, p.ErrorCode)
	require.Contains(t, *p.ErrorMessage, "decompresses past")
	t.Logf("gzip bomb (%d bytes): %d MiB allocated", len(gz), alloc>>20)
	require.Less(t, alloc, uint64(maxDecompressed)*5/2, "refusing a gzip bomb allocated %d MiB", alloc>>20)

	alloc = allocatedBy(func() { p = e.produce("bombs", 0, zs) })
	require.Equal(t, kerr.MessageTooLarge.Code, p.ErrorCode)
	require.Contains(t, *p.ErrorMessage, "records cost past")
	t.Logf("zstd empty-records bomb (%d bytes): %d MiB allocated", len(zs), alloc>>20)
	require.Less(t, alloc, uint64(maxRecordCost)*3/2, "refusing a many-records bomb allocated %d MiB", alloc>>20)

	res, _ := e.stored("bombs", 0)
	require.Equal(t, int64(0), res.HighWatermark, "nothing of a bomb is written")
	require.Equal(t, decodeBudget.size, decodeBudget.free, "every claim was given back")

	// An ordinary compressed batch still goes through.
	require.Equal(t, int16(0), e.produce("bombs", 0, testBatch{codec: codecZstd, firstTS: 1, records: sampleRecords()}.encode(t)).ErrorCode)
}

// TestProduceBombsShareOneBudget: concurrent bombs on several connections
// are each refused, and at no moment hold more than the process budget
// between them; the budget is whole again afterwards. Half are many-records
// bombs, whose refused record cost is taken back: a restart must still
// wait for more than they reached, or two of them retry forever.
func TestProduceBombsShareOneBudget(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, nil)
	e.createTopic("bombs")
	bombs := [][]byte{gzipZerosBomb(t), emptyRecordsBomb(t)}
	decodeBudget.mu.Lock()
	decodeBudget.peak = 0
	decodeBudget.mu.Unlock()
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
	require.LessOrEqual(t, decodeBudget.peak, decodeBudget.size)
	require.Greater(t, decodeBudget.peak, int64(maxDecompressed), "the bombs did reach the ceiling")
	require.Equal(t, decodeBudget.size, decodeBudget.free)
}

// TestProduceWaitsForDecodeBudget: a request that finds the budget taken
// waits for it rather than failing, and gives up only with its context.
func TestProduceWaitsForDecodeBudget(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, nil)
	e.createTopic("orders")
	good := testBatch{codec: codecGzip, firstTS: 1, records: sampleRecords()}.encode(t)
	require.True(t, decodeBudget.tryAcquire(decodeBudget.size), "budget idle at the start")

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
	require.Eventually(t, func() bool {
		decodeBudget.mu.Lock()
		defer decodeBudget.mu.Unlock()
		return len(decodeBudget.waiters) == 1
	}, 10*time.Second, time.Millisecond, "queued for the budget")
	require.Empty(t, done, "answered while the budget was taken")
	decodeBudget.release(decodeBudget.size)
	p, ok := <-done
	require.True(t, ok, "the waiting request failed")
	require.Equal(t, int16(0), p.ErrorCode)
	require.Equal(t, int64(0), p.BaseOffset)
	require.Equal(t, decodeBudget.size, decodeBudget.free)
}
