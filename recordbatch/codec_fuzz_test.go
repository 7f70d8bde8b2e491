package recordbatch_test

import (
	"bytes"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/queen-mq/queen-kafka/recordbatch"
)

// The codec targets feed arbitrary bytes to one decompressor each, as a
// produce batch's records would reach it, under a small allowance: never a
// panic, never more output than the allowance, and every byte of buffer,
// of zstd history and of lz4 block buffers asked of the budget first and
// within its ceiling, so that a bomb is a refusal and not memory.
func FuzzDecompressGzip(f *testing.F)   { fuzzCodec(f, recordbatch.CodecGzip) }
func FuzzDecompressSnappy(f *testing.F) { fuzzCodec(f, recordbatch.CodecSnappy) }
func FuzzDecompressLz4(f *testing.F)    { fuzzCodec(f, recordbatch.CodecLz4) }
func FuzzDecompressZstd(f *testing.F)   { fuzzCodec(f, recordbatch.CodecZstd) }

// codecFrame is the fuzzing pool's frame: its decompression ceiling and the
// zstd window it admits.
const codecFrame = 1 << 20

var codecPool = recordbatch.NewPool(recordbatch.Limits{Frame: codecFrame})

func fuzzCodec(f *testing.F, codec int) {
	for _, s := range codecSeeds(f, codec) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		const limit = 256 << 10
		paid := 0
		pay := func(capacity int) error {
			if capacity > limit+1 {
				t.Fatalf("asked for a %d-byte buffer under a %d allowance", capacity, limit)
			}
			paid = max(paid, capacity)
			return nil
		}
		// A zstd history is bounded by the pool's window; an lz4
		// Reader's buffers by the largest block size a frame may declare.
		ceiling := 2*codecFrame + len(src)
		if codec == recordbatch.CodecLz4 {
			ceiling = recordbatch.Lz4MaxHold
		}
		window := func(n int) error {
			if n > ceiling {
				t.Fatalf("asked for a %d-byte decoder hold past its %d ceiling", n, ceiling)
			}
			return nil
		}
		out, err := codecPool.DecompressPaying(nil, src, codec, limit, pay, window)
		if len(out) > limit {
			t.Fatalf("%d bytes out under a %d allowance (err %v)", len(out), limit, err)
		}
		if cap(out) > paid {
			t.Fatalf("output holds %d bytes of buffer, %d paid", cap(out), paid)
		}
	})
}

// codecSeeds are valid payloads of codec: empty, small, repetitive (a
// ratio a bomb would use) and, for Snappy, the xerial framing Java
// producers send.
func codecSeeds(f testing.TB, codec int) [][]byte {
	plain := [][]byte{nil, []byte("hello, queen"), bytes.Repeat([]byte("kafka "), 4096), bytes.Repeat([]byte{0}, 300<<10)}
	var out [][]byte
	for _, p := range plain {
		out = append(out, compress(f, codec, p))
	}
	if codec == recordbatch.CodecSnappy {
		block := s2.EncodeSnappy(nil, []byte("hello, xerial"))
		x := append([]byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}, byte(len(block)>>24), byte(len(block)>>16), byte(len(block)>>8), byte(len(block)))
		out = append(out, append(x, block...))
	}
	return out
}

func compress(f testing.TB, codec int, p []byte) []byte {
	var buf bytes.Buffer
	switch codec {
	case recordbatch.CodecGzip:
		w := gzip.NewWriter(&buf)
		_, _ = w.Write(p)
		must(f, w.Close())
	case recordbatch.CodecSnappy:
		return s2.EncodeSnappy(nil, p)
	case recordbatch.CodecLz4:
		w := lz4.NewWriter(&buf)
		_, _ = w.Write(p)
		must(f, w.Close())
	case recordbatch.CodecZstd:
		w, err := zstd.NewWriter(&buf, zstd.WithWindowSize(1<<16))
		must(f, err)
		_, _ = w.Write(p)
		must(f, w.Close())
	}
	return buf.Bytes()
}

func must(f testing.TB, err error) {
	f.Helper()
	if err != nil {
		f.Fatal(err)
	}
}
