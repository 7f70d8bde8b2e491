package recordbatch_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/queen-mq/queen-kafka/recordbatch"
	"github.com/queen-mq/queen-kafka/recordbatch/batchtest"
)

// TestZstdWindowCostsWhatItHolds: a zstd frame's header declares the
// history its decoder keeps, and a batch of a few dozen bytes declaring a
// 64 MiB window cost 64 MiB per decode, outside the decode budget. Sixteen
// such batches decoded at once now decode (their records are intact) at a
// cost sized by what they carry, and a single-segment frame declaring 64
// MiB of content it does not hold is refused before anything is sized by
// it. The budget is whole afterwards.
func TestZstdWindowCostsWhatItHolds(t *testing.T) {
	const n, window = 16, 64 << 20
	p := newPool()
	wide := batchtest.WideWindowZstd(t, window, batchtest.SampleRecords())
	require.Less(t, len(wide), 200, "a small batch")
	// Warm the pools so that what is measured is the decodes.
	f, err := decodeRequest(context.Background(), p, wide)
	require.NoError(t, err)
	require.Nil(t, f)

	faults := make([]*recordbatch.Fault, n)
	errs := make([]error, n)
	alloc := batchtest.AllocatedBy(func() {
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				faults[i], errs[i] = decodeRequest(context.Background(), p, wide)
			}()
		}
		wg.Wait()
	})
	for i := range n {
		require.NoError(t, errs[i], "decode %d", i)
		require.Nil(t, faults[i], "decode %d", i)
	}
	t.Logf("%d batches of %d bytes declaring a %d MiB window: %d KiB allocated", n, len(wide), window>>20, alloc>>10)
	require.Less(t, alloc, uint64(n)<<20, "decoding %d wide-window batches allocated %d MiB", n, alloc>>20)
	require.LessOrEqual(t, p.Budget().Peak(), p.Budget().Size())
	require.Equal(t, p.Budget().Size(), p.Budget().Free(), "every claim was given back")

	lying := batchtest.LyingContentSizeZstd(t, window)
	alloc = batchtest.AllocatedBy(func() { f, err = decodeRequest(context.Background(), p, lying) })
	require.NoError(t, err)
	require.NotNil(t, f)
	require.Equal(t, kerr.CorruptMessage.Code, f.Code, f.Msg)
	t.Logf("single-segment frame declaring %d MiB: %d KiB allocated", window>>20, alloc>>10)
	require.Less(t, alloc, uint64(1)<<20, "refusing a lying content size allocated %d MiB", alloc>>20)
	require.Equal(t, p.Budget().Size(), p.Budget().Free())
}

// TestZstdLoweredWindowDecodesTheSame: a frame whose window is lowered to
// what its blocks hold decodes to the same records, over many blocks whose
// matches reach back across them (a streaming encoder with an 8 MiB
// window, as Java's and klauspost's write a batch).
func TestZstdLoweredWindowDecodesTheSame(t *testing.T) {
	recs := batchtest.BenchRecords(4000, 300)
	raw := batchtest.Batch{Codec: recordbatch.CodecZstd, FirstTS: 1, Records: recs}.Encode(t)
	got, f := decodeEnvelopes(t, raw)
	require.Nil(t, f)
	require.Len(t, got, len(recs))
	for i := range recs {
		require.Equal(t, recs[i].Value, got[i].Value, "record %d", i)
		require.Equal(t, recs[i].Key, got[i].Key, "record %d", i)
	}
}
