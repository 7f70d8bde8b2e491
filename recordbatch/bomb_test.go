package recordbatch_test

import (
	"context"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/recordbatch"
	"github.com/queen-mq/queen-kafka/recordbatch/batchtest"
)

// newPool is a pool with the facade's ceilings and a budget of its own.
func newPool() *recordbatch.Pool {
	return recordbatch.NewPool(recordbatch.Limits{Frame: maxDecompressed, ItemOverhead: int(unsafe.Sizeof(queen.PushItem{})) + 48})
}

// decodeRequest decodes a request of the one batch raw on a paid decoder
// of p, as a produce request alone decodes: a Busy fault gives everything
// back, waits for room and decodes again.
func decodeRequest(ctx context.Context, p *recordbatch.Pool, raw []byte) (*recordbatch.Fault, error) {
	var b kmsg.RecordBatch
	if f := recordbatch.ParseProduce(raw, &b); f != nil {
		return f, nil
	}
	d := p.Get()
	defer d.Release()
	for {
		d.StartRequest()
		_, _, f := d.Envelopes(&b, "bombs", nil, nil)
		if !f.Busy() {
			return f, nil
		}
		if err := d.Restart(ctx); err != nil {
			return nil, err
		}
	}
}

// TestDecodeBombsCostAFrame: compression buys a client no more room than
// it already had (seed 000, "Decompressed produce batch"). A gzip batch of
// 300 MiB of zeros and a zstd batch of a million empty records are refused
// MESSAGE_TOO_LARGE by the decoder, and refusing them allocates a small
// multiple of one frame, not of what they expand to.
func TestDecodeBombsCostAFrame(t *testing.T) {
	p := newPool()
	gz, zs := batchtest.GzipZerosBomb(t), batchtest.EmptyRecordsBomb(t)
	var f *recordbatch.Fault
	var err error

	alloc := batchtest.AllocatedBy(func() { f, err = decodeRequest(context.Background(), p, gz) })
	require.NoError(t, err)
	require.Equal(t, kerr.MessageTooLarge.Code, f.Code)
	require.Contains(t, f.Msg, "decompresses past")
	t.Logf("gzip bomb (%d bytes): %d MiB allocated", len(gz), alloc>>20)
	require.Less(t, alloc, uint64(maxDecompressed)*5/2, "refusing a gzip bomb allocated %d MiB", alloc>>20)

	alloc = batchtest.AllocatedBy(func() { f, err = decodeRequest(context.Background(), p, zs) })
	require.NoError(t, err)
	require.Equal(t, kerr.MessageTooLarge.Code, f.Code)
	require.Contains(t, f.Msg, "records cost past")
	t.Logf("zstd empty-records bomb (%d bytes): %d MiB allocated", len(zs), alloc>>20)
	require.Less(t, alloc, uint64(maxDecompressed)*3/2, "refusing a many-records bomb allocated %d MiB", alloc>>20)

	require.Equal(t, p.Budget().Size(), p.Budget().Free(), "every claim was given back")

	// An ordinary compressed batch still decodes.
	f, err = decodeRequest(context.Background(), p, batchtest.Batch{Codec: recordbatch.CodecZstd, FirstTS: 1, Records: batchtest.SampleRecords()}.Encode(t))
	require.NoError(t, err)
	require.Nil(t, f)
}

// TestDecodeBombsShareOneBudget: concurrent bombs are each refused, and at
// no moment hold more than the pool's budget between them; the budget is
// whole again afterwards. Half are many-records bombs, whose refused record
// cost is taken back: a restart must still wait for more than they
// reached, or two of them retry forever.
func TestDecodeBombsShareOneBudget(t *testing.T) {
	p := newPool()
	bombs := [][]byte{batchtest.GzipZerosBomb(t), batchtest.EmptyRecordsBomb(t)}
	var wg sync.WaitGroup
	codes := make([]int16, 4)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if f, err := decodeRequest(ctx, p, bombs[i%2]); err == nil && f != nil {
				codes[i] = f.Code
			}
		}()
	}
	wg.Wait()
	for i, code := range codes {
		require.Equal(t, kerr.MessageTooLarge.Code, code, "bomb %d", i)
	}
	require.LessOrEqual(t, p.Budget().Peak(), p.Budget().Size())
	require.Greater(t, p.Budget().Peak(), int64(maxDecompressed), "the bombs did reach the ceiling")
	require.Equal(t, p.Budget().Size(), p.Budget().Free())
}

// TestDecodeWaitsForBudget: a decode that finds the budget taken waits for
// it rather than failing, and gives up only with its context.
func TestDecodeWaitsForBudget(t *testing.T) {
	p := newPool()
	good := batchtest.Batch{Codec: recordbatch.CodecGzip, FirstTS: 1, Records: batchtest.SampleRecords()}.Encode(t)
	budget := p.Budget()
	require.True(t, budget.TryAcquire(budget.Size()), "budget idle at the start")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := decodeRequest(ctx, p, good)
	require.ErrorIs(t, err, context.Canceled, "waits, bounded by its context")

	type result struct {
		f   *recordbatch.Fault
		err error
	}
	done := make(chan result, 1)
	go func() {
		f, err := decodeRequest(context.Background(), p, good)
		done <- result{f, err}
	}()
	require.Eventually(t, func() bool { return budget.Waiting() == 1 }, 10*time.Second, time.Millisecond, "queued for the budget")
	require.Empty(t, done, "decoded while the budget was taken")
	budget.Release(budget.Size())
	r := <-done
	require.NoError(t, r.err, "the waiting decode failed")
	require.Nil(t, r.f)
	require.Equal(t, budget.Size(), budget.Free())
}

// TestDecodedRequestCostsOneFrame: one request's decompressed batch, its
// decompressor's history and its records' cost together stay within one
// frame, which is the whole budget. A compressed batch that decompresses
// to 60% of a frame, whose records cost 80% of one, is refused
// MESSAGE_TOO_LARGE; each alone used to be allowed a frame, so it held
// 1.4 frames and the budget was two (issue 20: twelve bombs kept two
// frames live, and the heap twice that). The same records uncompressed,
// which decompress to nothing, still decode; and a coalesced group's
// later request is not refused for the records of the requests before it
// (it is Busy, and goes to a group of its own).
func TestDecodedRequestCostsOneFrame(t *testing.T) {
	const frame = 8 << 20
	p := recordbatch.NewPool(recordbatch.Limits{Frame: frame, ItemOverhead: int(unsafe.Sizeof(queen.PushItem{})) + 48})
	recs := batchtest.BenchRecords(frame*6/10/1024, 1024)
	zstd := batchtest.Batch{Codec: recordbatch.CodecZstd, FirstTS: 1, Records: recs}.Encode(t)
	f, err := decodeRequest(context.Background(), p, zstd)
	require.NoError(t, err)
	require.NotNil(t, f, "a request holding 1.4 frames decoded")
	require.Equal(t, kerr.MessageTooLarge.Code, f.Code)
	require.Contains(t, f.Msg, "request ceiling")
	require.LessOrEqual(t, p.Budget().Size(), int64(frame+64<<10), "the budget is one request's ceiling")
	require.LessOrEqual(t, p.Budget().Peak(), p.Budget().Size())
	require.Equal(t, p.Budget().Size(), p.Budget().Free(), "every claim was given back")

	plain := batchtest.Batch{FirstTS: 1, Records: recs}.Encode(t)
	f, err = decodeRequest(context.Background(), p, plain)
	require.NoError(t, err)
	require.Nil(t, f, "the records uncompressed cost what they cost, within a frame")

	// A group of two such requests on one decoder: the second fits a
	// request's ceiling but not the group's budget.
	var b kmsg.RecordBatch
	require.Nil(t, recordbatch.ParseProduce(plain, &b))
	d := p.Get()
	defer d.Release()
	d.StartRequest()
	_, _, f = d.Envelopes(&b, "t", nil, nil)
	require.Nil(t, f)
	d.StartRequest()
	_, _, f = d.Envelopes(&b, "t", nil, nil)
	require.NotNil(t, f)
	require.True(t, f.Busy(), "the group's second request refused for the first's records: %v", f.Msg)
}
