package node

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

// maxDecompressed bounds what one produce request's batches may decompress
// to together: one frame's worth (operator page, "Decompressed produce
// batch"), so that compression buys a client no more room than an
// uncompressed frame would have.
const maxDecompressed = maxFrame

// Compression codecs of a RecordBatch's attributes (bits 0-2).
const (
	codecNone   = 0
	codecGzip   = 1
	codecSnappy = 2
	codecLz4    = 3
	codecZstd   = 4
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
// for the duration of its decode.
type decompressors struct {
	gzip sync.Pool // *gzipDecoder
	lz4  sync.Pool // *lz4.Reader
	zstd sync.Pool // *zstdDecoder
}

type gzipDecoder struct {
	r   gzip.Reader
	src bytes.Reader
}

type zstdDecoder struct{ d *zstd.Decoder }

var codecs decompressors

// decompress appends the decompressed form of src (codec c) to dst and
// returns it. Output is streamed through a limit, so a declared size is
// never trusted and never more than limit bytes are produced (the caller
// passes what is left of one frame's worth for the whole request).
func (ds *decompressors) decompress(dst, src []byte, c int, limit int) ([]byte, error) {
	switch c {
	case codecGzip:
		g, _ := ds.gzip.Get().(*gzipDecoder)
		if g == nil {
			g = new(gzipDecoder)
		}
		defer ds.gzip.Put(g)
		g.src.Reset(src)
		if err := g.r.Reset(&g.src); err != nil {
			return dst, fmt.Errorf("gzip: %w", err)
		}
		return readLimited(dst, &g.r, limit)
	case codecSnappy:
		return decodeSnappy(dst, src, limit)
	case codecLz4:
		r, _ := ds.lz4.Get().(*lz4.Reader)
		if r == nil {
			r = lz4.NewReader(nil)
		}
		defer ds.lz4.Put(r)
		r.Reset(bytes.NewReader(src))
		return readLimited(dst, r, limit)
	case codecZstd:
		z, _ := ds.zstd.Get().(*zstdDecoder)
		if z == nil {
			d, err := zstd.NewReader(nil,
				zstd.WithDecoderConcurrency(1),
				zstd.WithDecoderMaxMemory(maxDecompressed),
				zstd.WithDecoderMaxWindow(maxDecompressed))
			if err != nil {
				return dst, fmt.Errorf("zstd: %w", err)
			}
			z = &zstdDecoder{d: d}
			// A pooled decoder dropped by the GC must release its state.
			runtime.SetFinalizer(z, func(z *zstdDecoder) { z.d.Close() })
		}
		defer ds.zstd.Put(z)
		if err := z.d.Reset(bytes.NewReader(src)); err != nil {
			return dst, fmt.Errorf("zstd: %w", err)
		}
		return readLimited(dst, z.d, limit)
	}
	return dst, fmt.Errorf("unknown compression codec %d", c)
}

// readLimited appends everything r yields to dst, refusing output past
// limit. It grows dst with what actually arrives, never with what a header
// claims.
func readLimited(dst []byte, r io.Reader, limit int) ([]byte, error) {
	start := len(dst)
	for {
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		room := cap(dst) - len(dst)
		if over := len(dst) - start + room - (limit + 1); over > 0 {
			room -= over
		}
		n, err := r.Read(dst[len(dst) : len(dst)+room])
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
func decodeSnappy(dst, src []byte, limit int) ([]byte, error) {
	if len(src) < xerialHeaderLen || !bytes.Equal(src[:len(xerialMagic)], xerialMagic) {
		return appendSnappyBlock(dst, src, len(dst), limit)
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
		if dst, err = appendSnappyBlock(dst, rest[:n], start, limit); err != nil {
			return dst[:start], err
		}
		rest = rest[n:]
	}
	return dst, nil
}

// appendSnappyBlock decodes one raw block onto dst. The block's declared
// length is checked against what its own size can hold and against the
// allowance (limit bytes counted from start) before anything is sized by it.
func appendSnappyBlock(dst, block []byte, start, limit int) ([]byte, error) {
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
	dst = growLen(dst, n)
	if _, err := s2.Decode(dst[at:], block); err != nil {
		return dst[:at], fmt.Errorf("snappy: %w", err)
	}
	return dst, nil
}

// growLen extends b by n bytes, reallocating only when the capacity is short.
func growLen(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), len(b)+n+len(b)/4)
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}
