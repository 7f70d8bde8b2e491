package recordbatch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Compression codecs of a RecordBatch's attributes (bits 0-2).
const (
	CodecNone   = 0
	CodecGzip   = 1
	CodecSnappy = 2
	CodecLz4    = 3
	CodecZstd   = 4
)

// errDecompressedTooLarge is a batch whose records would decompress past
// the request's allowance; nothing past the limit is ever allocated.
var errDecompressedTooLarge = errors.New("decompressed batch exceeds one frame")

// snappyMaxRatio bounds how far a standard Snappy block can expand: its
// densest element is a 3-byte copy of 64 bytes. A block declaring more is
// not one a Kafka producer wrote, and is refused before its declared length
// is allocated.
const snappyMaxRatio = 22

// xerialMagic opens the xerial framing Java's snappy-java stream (and
// franz-go's streaming compressor) writes: magic, version, compatible
// version, then blocks of a big-endian length and a raw Snappy block.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialHeaderLen = 16

// decompressors pools the stateful decoders; one produce batch borrows one
// for the duration of its decode. maxDecompressed bounds a zstd decoder's
// window and memory as the request ceiling bounds its output.
type decompressors struct {
	maxDecompressed int
	gzip            sync.Pool // *gzipDecoder
	lz4             sync.Pool // *lz4.Reader
	zstd            sync.Pool // *zstdDecoder
}

type gzipDecoder struct {
	r   gzip.Reader
	src bytes.Reader
}

// zstdDecoder is a pooled decoder, the reader it decodes from and the
// buffer of a batch whose window descriptors were lowered.
type zstdDecoder struct {
	d       *zstd.Decoder
	src     bytes.Reader
	patched []byte
}

// putZstd pools z after a decode that held hold bytes, unless its history
// or buffer outgrew what a pooled decoder keeps: that memory was paid for
// the decode only, so it goes with the decoder.
func (ds *decompressors) putZstd(z *zstdDecoder, hold int) {
	z.src.Reset(nil)
	if hold > scratchKeep {
		runtime.SetFinalizer(z, nil)
		z.d.Close()
		return
	}
	ds.zstd.Put(z)
}

// putLz4 pools r once it has given back its buffers: a decode refused or
// failed mid-frame leaves them taken, and they were paid for that decode
// only. A Reader that decoded linked blocks is dropped instead: it keeps
// their last bytes as the dictionary of whatever it decodes next (Reset
// does not clear it), and a crafted block of another request, another
// tenant's, would copy them into its records.
func (ds *decompressors) putLz4(r *lz4.Reader, linked bool) {
	r.Reset(nil)
	if !linked {
		ds.lz4.Put(r)
	}
}

// payFunc is asked before dst grows to a capacity; an error refuses the
// growth and ends the decode with it.
type payFunc func(capacity int) error

func freeGrowth(int) error { return nil }

// decompress appends the decompressed form of src (codec c) to dst and
// returns it. Output is streamed through a limit, so a declared size is
// never trusted and never more than limit bytes are produced (the caller
// passes what is left of one frame's worth for the whole request); every
// growth of dst is paid for first, and payWindow for what the decoder holds
// meanwhile (a zstd history, an lz4 Reader's block buffers).
func (ds *decompressors) decompress(dst, src []byte, c int, limit int, pay, payWindow payFunc) ([]byte, error) {
	switch c {
	case CodecGzip:
		g, _ := ds.gzip.Get().(*gzipDecoder)
		if g == nil {
			g = new(gzipDecoder)
		}
		defer ds.gzip.Put(g)
		g.src.Reset(src)
		if err := g.r.Reset(&g.src); err != nil {
			return dst, fmt.Errorf("gzip: %w", err)
		}
		return readLimited(dst, &g.r, limit, pay)
	case CodecSnappy:
		return decodeSnappy(dst, src, limit, pay)
	case CodecLz4:
		// The Reader's buffers are sized by each frame's declared block
		// size, whatever the frame holds: paid before it takes any
		// (lz4_frames.go).
		plan := planLz4(src)
		if err := payWindow(plan.hold); err != nil {
			return dst, err
		}
		r, _ := ds.lz4.Get().(*lz4.Reader)
		if r == nil {
			r = lz4.NewReader(nil)
		}
		defer ds.putLz4(r, plan.linked)
		r.Reset(bytes.NewReader(src))
		return readLimited(dst, r, limit, pay)
	case CodecZstd:
		// The history a frame declares is paid before a decoder is sized
		// by it, and lowered first to what the frame can hold
		// (zstd_window.go).
		plan, err := planZstd(src)
		if err != nil {
			return dst, fmt.Errorf("zstd: %w", err)
		}
		if plan.window > uint64(ds.maxDecompressed) {
			return dst, fmt.Errorf("zstd: %w", zstd.ErrWindowSizeExceeded)
		}
		hold := plan.ring()
		if len(plan.patches) > 0 {
			hold += len(src)
		}
		if err := payWindow(hold); err != nil {
			return dst, err
		}
		z, _ := ds.zstd.Get().(*zstdDecoder)
		if z == nil {
			d, err := zstd.NewReader(nil,
				zstd.WithDecoderConcurrency(1),
				zstd.WithDecoderMaxMemory(uint64(ds.maxDecompressed)),
				zstd.WithDecoderMaxWindow(uint64(ds.maxDecompressed)))
			if err != nil {
				return dst, fmt.Errorf("zstd: %w", err)
			}
			z = &zstdDecoder{d: d}
			// A pooled decoder dropped by the GC must release its state.
			runtime.SetFinalizer(z, func(z *zstdDecoder) { z.d.Close() })
		}
		defer ds.putZstd(z, hold)
		if len(plan.patches) > 0 {
			z.patched = plan.apply(src, z.patched)
			z.src.Reset(z.patched)
		} else {
			z.src.Reset(src)
		}
		if err := z.d.Reset(&z.src); err != nil {
			return dst, fmt.Errorf("zstd: %w", err)
		}
		return readLimited(dst, z.d, limit, pay)
	}
	return dst, fmt.Errorf("unknown compression codec %d", c)
}

// minDecodeBuffer is the least capacity a decompression buffer grows to.
const minDecodeBuffer = 64 << 10

// readLimited appends everything r yields to dst, refusing output past
// limit. It grows dst with what actually arrives, never with what a header
// claims, doubling its capacity (each byte is copied about once, where
// append's 1.25x steps copy a large buffer four times over and leave the
// copies for the collector) up to limit+1, the byte that proves a refusal.
func readLimited(dst []byte, r io.Reader, limit int, pay payFunc) ([]byte, error) {
	start := len(dst)
	for {
		if len(dst) == cap(dst) {
			var err error
			if dst, err = growCap(dst, max(2*cap(dst), minDecodeBuffer), start+limit+1, pay); err != nil {
				return dst[:start], err
			}
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if len(dst)-start > limit {
			return dst[:start], errDecompressedTooLarge
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst[:start], err
		}
	}
}

// decodeSnappy decodes a raw Snappy block or the xerial framing, whichever
// src is; Kafka producers send both.
func decodeSnappy(dst, src []byte, limit int, pay payFunc) ([]byte, error) {
	if len(src) < xerialHeaderLen || !bytes.Equal(src[:len(xerialMagic)], xerialMagic) {
		return appendSnappyBlock(dst, src, len(dst), limit, pay)
	}
	start := len(dst)
	for rest := src[xerialHeaderLen:]; len(rest) > 0; {
		if len(rest) < 4 {
			return dst[:start], errors.New("snappy: truncated xerial block length")
		}
		n := binary.BigEndian.Uint32(rest)
		rest = rest[4:]
		if uint64(n) > uint64(len(rest)) {
			return dst[:start], errors.New("snappy: xerial block runs past the batch")
		}
		var err error
		if dst, err = appendSnappyBlock(dst, rest[:n], start, limit, pay); err != nil {
			return dst[:start], err
		}
		rest = rest[n:]
	}
	return dst, nil
}

// appendSnappyBlock decodes one raw block onto dst. The block's declared
// length is checked against what its own size can hold and against the
// allowance (limit bytes counted from start) before anything is sized by it.
func appendSnappyBlock(dst, block []byte, start, limit int, pay payFunc) ([]byte, error) {
	n, err := s2.DecodedLen(block)
	if err != nil {
		return dst, fmt.Errorf("snappy: %w", err)
	}
	if n > snappyMaxRatio*len(block)+32 {
		return dst, errors.New("snappy: block declares more than it can hold")
	}
	if len(dst)-start+n > limit {
		return dst, errDecompressedTooLarge
	}
	at := len(dst)
	if cap(dst)-at < n {
		if dst, err = growCap(dst, max(2*cap(dst), at+n), start+limit, pay); err != nil {
			return dst, err
		}
	}
	dst = dst[:at+n]
	if _, err := s2.Decode(dst[at:], block); err != nil {
		return dst[:at], fmt.Errorf("snappy: %w", err)
	}
	return dst, nil
}

// growCap reallocates b with capacity want, but no more than ceiling, once
// pay has accepted it.
func growCap(b []byte, want, ceiling int, pay payFunc) ([]byte, error) {
	want = min(want, ceiling)
	if err := pay(want); err != nil {
		return b, err
	}
	nb := make([]byte, len(b), want)
	copy(nb, b)
	return nb, nil
}
