package recordbatch_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/pierrec/lz4/v4"
	"github.com/stretchr/testify/require"

	"github.com/queen-mq/queen-kafka/recordbatch"
	"github.com/queen-mq/queen-kafka/recordbatch/batchtest"
)

// lz4Frame is raw in one lz4 frame of block maximum block, as pierrec's
// Writer (franz-go's, 4 MiB blocks by default) writes it.
func lz4Frame(t testing.TB, block lz4.BlockSize, raw []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	w := lz4.NewWriter(&b)
	require.NoError(t, w.Apply(lz4.BlockSizeOption(block)))
	_, err := w.Write(raw)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return b.Bytes()
}

// lz4Header is a frame descriptor of flags flg and block byte bd with its
// checksum, found by asking the library which of the 256 it does not
// refuse for its checksum.
func lz4Header(t testing.TB, flg, bd byte) []byte {
	t.Helper()
	for hc := range 256 {
		h := []byte{0x04, 0x22, 0x4d, 0x18, flg, bd, byte(hc)}
		if _, err := lz4.ValidFrameHeader(h); !errors.Is(err, lz4.ErrInvalidHeaderChecksum) {
			return h
		}
	}
	t.Fatalf("no checksum makes FLG %#x BD %#x valid", flg, bd)
	return nil
}

// lz4Charge decompresses src and returns the output and the most asked of
// payWindow.
func lz4Charge(t testing.TB, src []byte) ([]byte, int, error) {
	t.Helper()
	charged := 0
	window := func(n int) error { charged = max(charged, n); return nil }
	out, err := pool.DecompressPaying(nil, src, recordbatch.CodecLz4, 1<<20, func(int) error { return nil }, window)
	return out, charged, err
}

// TestLz4BlockBuffersCostWhatTheyHold: pierrec's lz4 Reader takes two
// buffers of a frame's declared block maximum per decode, and a batch of a
// few dozen bytes declaring 4 MiB blocks (franz-go's default) held 8 MiB
// outside the decode budget. Each frame is now charged its buffers before
// the Reader takes them (a linked frame its dictionary too, concatenated
// frames the largest, a legacy frame its 8 MiB blocks), a 64 KiB-block
// frame costs little, everything decodes the same, and a malformed frame is
// an error. Sixteen 4 MiB-block batches decoded at once are intact, the
// budget saw their buffers and is whole afterwards.
func TestLz4BlockBuffersCostWhatTheyHold(t *testing.T) {
	raw := bytes.Repeat([]byte("queen "), 20)
	for _, c := range []struct {
		block    lz4.BlockSize
		min, max int
	}{
		{lz4.Block64Kb, 128 << 10, 256 << 10},
		{lz4.Block256Kb, 512 << 10, 1 << 20},
		{lz4.Block1Mb, 2 << 20, 3 << 20},
		{lz4.Block4Mb, 8 << 20, 9 << 20},
	} {
		frame := lz4Frame(t, c.block, raw)
		require.Less(t, len(frame), 64, "a small frame")
		out, charged, err := lz4Charge(t, frame)
		require.NoError(t, err, "%s", c.block)
		require.Equal(t, raw, out, "%s decodes the same", c.block)
		t.Logf("%d-byte frame of %s blocks: %d KiB charged", len(frame), c.block, charged>>10)
		require.GreaterOrEqual(t, charged, c.min, "%s", c.block)
		require.LessOrEqual(t, charged, c.max, "%s", c.block)
	}

	// Concatenated frames, one after a skippable frame: the largest.
	small, wide := lz4Frame(t, lz4.Block64Kb, raw), lz4Frame(t, lz4.Block4Mb, raw)
	skip := []byte{0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 1, 2, 3}
	out, charged, err := lz4Charge(t, bytes.Join([][]byte{small, skip, wide}, nil))
	require.NoError(t, err)
	require.Equal(t, append(append([]byte(nil), raw...), raw...), out)
	require.GreaterOrEqual(t, charged, 8<<20, "the second frame's buffers")

	// A frame of linked blocks keeps a dictionary besides.
	linked := append(lz4Header(t, 0x40, 0x70), byte(len(raw)), 0, 0, 0x80)
	linked = append(append(linked, raw...), 0, 0, 0, 0)
	out, charged, err = lz4Charge(t, linked)
	require.NoError(t, err)
	require.Equal(t, raw, out)
	require.GreaterOrEqual(t, charged, 12<<20, "linked 4 MiB blocks")

	// A legacy frame: 8 MiB blocks, an 8 MiB bound, linked.
	var legacy bytes.Buffer
	lw := lz4.NewWriter(&legacy)
	require.NoError(t, lw.Apply(lz4.LegacyOption(true)))
	_, err = lw.Write(raw)
	require.NoError(t, err)
	require.NoError(t, lw.Close())
	out, charged, err = lz4Charge(t, legacy.Bytes())
	require.NoError(t, err)
	require.Equal(t, raw, out)
	require.Equal(t, recordbatch.Lz4MaxHold, charged)

	// Malformed headers stay errors.
	for name, bad := range map[string][]byte{
		"truncated descriptor": wide[:5],
		"block max size 3":     append(lz4Header(t, 0x60, 0x30), 0, 0, 0, 0),
		"block past its max":   append(lz4Header(t, 0x60, 0x40), 0x01, 0x00, 0x01, 0x80),
		"truncated block":      wide[:len(wide)-6],
		"bad magic":            []byte{1, 2, 3, 4, 5, 6, 7},
		"bad header checksum":  append(append([]byte(nil), wide[:6]...), wide[6]^1),
	} {
		_, _, err := lz4Charge(t, bad)
		require.Error(t, err, name)
	}

	// Through the budget, concurrently.
	const n = 16
	p := newPool()
	batch := batchtest.Batch{Codec: recordbatch.CodecLz4, FirstTS: 1, Records: batchtest.SampleRecords()}.Encode(t)
	require.Less(t, len(batch), 200, "a small batch")
	faults := make([]*recordbatch.Fault, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			faults[i], errs[i] = decodeRequest(context.Background(), p, batch)
		}()
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i], "decode %d", i)
		require.Nil(t, faults[i], "decode %d", i)
	}
	t.Logf("%d batches of %d bytes declaring 4 MiB blocks: budget peak %d MiB", n, len(batch), p.Budget().Peak()>>20)
	require.GreaterOrEqual(t, p.Budget().Peak(), int64(8<<20), "the Reader's buffers were paid")
	require.LessOrEqual(t, p.Budget().Peak(), p.Budget().Size())
	require.Equal(t, p.Budget().Size(), p.Budget().Free(), "every claim was given back")
	got, f := decodeEnvelopes(t, batch)
	require.Nil(t, f)
	require.Len(t, got, len(batchtest.SampleRecords()))
}

// TestLz4HistoryStaysWithItsBatch: the lz4 Reader keeps the last bytes of
// a frame of linked blocks as its dictionary and a Reset does not clear
// it, so a pooled Reader handed a frame whose first block copies from
// before its start filled that block with the previous batch's bytes,
// another request's, another tenant's. Such a block is now refused as the
// corrupt input it is, whatever was decoded before it.
func TestLz4HistoryStaysWithItsBatch(t *testing.T) {
	p := recordbatch.NewPool(recordbatch.Limits{Frame: 1 << 20})
	secret := []byte("another tenant's record, not to be read")
	victim := append(lz4Header(t, 0x40, 0x40), byte(len(secret)), 0, 0, 0x80)
	victim = append(append(victim, secret...), 0, 0, 0, 0)
	// One block: a 19-byte match reaching len(secret) back from the start
	// of the output, then the five literals a block ends with.
	reach := []byte{0x0F, byte(len(secret)), 0, 0x00, 0x50, 'x', 'x', 'x', 'x', 'x'}
	for _, flg := range []byte{0x60, 0x40} { // independent, linked
		thief := append(lz4Header(t, flg, 0x40), byte(len(reach)), 0, 0, 0)
		thief = append(append(thief, reach...), 0, 0, 0, 0)
		for range 3 {
			out, err := p.Decompress(nil, victim, recordbatch.CodecLz4, 1<<20)
			require.NoError(t, err)
			require.Equal(t, secret, out)
			out, err = p.Decompress(nil, thief, recordbatch.CodecLz4, 1<<20)
			require.Error(t, err, "FLG %#x decoded %q", flg, out)
			require.NotContains(t, string(out), "tenant")
		}
	}
}
