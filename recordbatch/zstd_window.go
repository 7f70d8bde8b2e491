package recordbatch

import (
	"errors"
	"fmt"

	"github.com/klauspost/compress/zstd"
)

// A zstd frame's header declares the window its decoder keeps as history,
// and klauspost's streaming decoder allocates that window (plus two blocks
// of room) at the frame's first block: a few dozen bytes declaring 64 MiB
// would cost 64 MiB, whatever the frame holds. No frame needs a window
// larger than the content its blocks can produce, so zstdPlan walks the
// block headers (no decoding) to bound each frame's content, lowers every
// declared window to that bound, and the decode pays the result on the
// budget: a batch costs what it carries.

// zstdMaxBlock is the most one zstd block decodes to (RFC 8878 3.1.1.2.3).
const zstdMaxBlock = 128 << 10

// zstdPlan is what decoding one batch's zstd frames holds: the largest
// window any frame needs, and the window descriptors to lower.
type zstdPlan struct {
	window  uint64
	patches []zstdPatch
}

// zstdPatch lowers the window descriptor byte at offset at to wd.
type zstdPatch struct {
	at int
	wd byte
}

// ring is the history the decoder allocates for the plan's window: the
// window and two blocks of room, as klauspost's ensureBlockRing sizes it.
func (p zstdPlan) ring() int {
	return int(p.window) + 2*(int(min(p.window, zstdMaxBlock))+64)
}

var errZstdContentSize = errors.New("frame declares more content than its blocks hold")

// planZstd walks src's frames and their block headers. A frame that does
// not parse, runs past src or declares a content size its blocks cannot
// hold is refused here, before any decoder is sized by it.
func planZstd(src []byte) (zstdPlan, error) {
	var p zstdPlan
	for off := 0; off < len(src); {
		var h zstd.Header
		if err := h.Decode(src[off:]); err != nil {
			return p, fmt.Errorf("frame at %d: %w", off, err)
		}
		pos := off + h.HeaderSize
		if h.Skippable {
			off = pos + int(h.SkippableSize)
			if off > len(src) {
				return p, fmt.Errorf("skippable frame at %d runs past the batch", off)
			}
			continue
		}
		var content uint64
		for last := false; !last; {
			if len(src)-pos < 3 {
				return p, fmt.Errorf("frame at %d: truncated block header", off)
			}
			bh := uint32(src[pos]) | uint32(src[pos+1])<<8 | uint32(src[pos+2])<<16
			pos += 3
			last = bh&1 != 0
			size := int(bh >> 3)
			switch (bh >> 1) & 3 {
			case 0: // raw
				content += uint64(size)
				pos += size
			case 1: // RLE: one byte repeated size times
				content += uint64(size)
				pos++
			case 2: // compressed
				content += zstdMaxBlock
				pos += size
			default:
				return p, fmt.Errorf("frame at %d: reserved block type", off)
			}
			if pos > len(src) {
				return p, fmt.Errorf("frame at %d: block runs past the batch", off)
			}
		}
		if h.HasCheckSum {
			pos += 4
			if pos > len(src) {
				return p, fmt.Errorf("frame at %d: truncated checksum", off)
			}
		}
		window := h.WindowSize
		switch {
		case h.HasFCS && h.FrameContentSize > content:
			return p, fmt.Errorf("frame at %d: %w", off, errZstdContentSize)
		case h.SingleSegment:
			// The window is the content size, now known to be held.
			window = max(h.FrameContentSize, zstd.MinWindowSize)
		case h.DictionaryID == 0 && content < window:
			// Matches reach back at most over what the frame has
			// produced (a dictionary would reach further; none is
			// configured, so such a frame fails to decode anyway).
			if h.HasFCS {
				content = h.FrameContentSize
			}
			wd := windowDescriptor(max(content, zstd.MinWindowSize))
			if w := descriptorWindow(wd); w < window {
				// Magic number, frame header descriptor, then the
				// window descriptor.
				p.patches = append(p.patches, zstdPatch{at: off + 5, wd: wd})
				window = w
			}
		}
		p.window = max(p.window, window)
		off = pos
	}
	return p, nil
}

// descriptorWindow is the window a Window_Descriptor byte declares.
func descriptorWindow(wd byte) uint64 {
	base := uint64(1) << (10 + wd>>3)
	return base + base/8*uint64(wd&7)
}

// windowDescriptor is the descriptor of the smallest window of at least
// n bytes (descriptors order as their windows do).
func windowDescriptor(n uint64) byte {
	for wd := range 255 {
		if descriptorWindow(byte(wd)) >= n {
			return byte(wd)
		}
	}
	return 255
}

// apply is src with the plan's patches, copied into buf (reused).
func (p zstdPlan) apply(src, buf []byte) []byte {
	buf = append(buf[:0], src...)
	for _, pt := range p.patches {
		buf[pt.at] = pt.wd
	}
	return buf
}
