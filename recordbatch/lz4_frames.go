package recordbatch

import "encoding/binary"

// pierrec/lz4's Reader sizes its buffers by what a frame's descriptor
// declares, not by what the frame holds: for each frame it takes one buffer
// for a compressed block and one for a decompressed block, each of the
// declared block maximum (4 MiB for block max size 7, franz-go's default),
// and a frame of linked blocks also keeps a copy of its last block as the
// next block's dictionary. A 15-byte header thus costs 8 MiB per decode.
// planLz4 reads the frame descriptors (no decoding) so that the decode pays
// that on the budget first, as a zstd window is paid.

const (
	lz4Magic       = 0x184D2204
	lz4LegacyMagic = 0x184C2102
	// lz4SkipMagic: the Reader skips a frame under any magic sharing its
	// top 24 bits (the format names only 16 of them).
	lz4SkipMagic = 0x184D2A50

	// A legacy frame decompresses 8 MiB blocks, and its compressed-block
	// buffer is the bound of an 8 MiB block (lz4block.legacyBlockBound).
	lz4LegacyBlock = 8 << 20
	lz4LegacyBound = lz4LegacyBlock + lz4LegacyBlock/255 + 16
	// lz4DictSlack covers a linked frame's dictionary beyond its largest
	// block: the Reader keeps up to 128 KiB of history, grown by append.
	lz4DictSlack = 256 << 10

	// lz4MaxHold is the most planLz4 charges: a legacy frame.
	lz4MaxHold = lz4LegacyBlock + lz4LegacyBound + lz4LegacyBlock + lz4DictSlack
)

// lz4Plan is what the Reader holds decoding one batch's frames.
type lz4Plan struct {
	// hold is the most it holds at once: it gives a frame's buffers back
	// before it takes the next frame's.
	hold int
	// linked: a frame of linked blocks (or a legacy frame) leaves its
	// last bytes in the Reader's dictionary, which a Reset does not clear.
	linked bool
}

// lz4BlockMax is the block maximum of a descriptor's BD byte, 0 for an
// index the Reader refuses.
func lz4BlockMax(bd byte) int {
	switch idx := bd >> 4 & 7; idx {
	case 4, 5, 6, 7:
		return 1 << (16 + 2*(idx-4))
	}
	return 0
}

// planLz4 walks src's frames and their block headers as the Reader will
// meet them. Where the Reader would fail (a bad magic, an invalid block
// size, a truncated frame) the walk stops: nothing past that point is ever
// allocated, and the decode reports the error. A frame is charged even if
// the Reader then refuses its header, which costs nothing but a refusal.
func planLz4(src []byte) lz4Plan {
	var p lz4Plan
	off := 0
	for len(src)-off >= 4 {
		magic := binary.LittleEndian.Uint32(src[off:])
		off += 4
		switch {
		case magic == lz4LegacyMagic:
			// A legacy frame runs to the end of the source, its blocks
			// linked.
			p.hold, p.linked = max(p.hold, lz4MaxHold), true
			return p
		case magic>>8 == lz4SkipMagic>>8:
			if len(src)-off < 4 {
				return p.cut()
			}
			skip := uint64(binary.LittleEndian.Uint32(src[off:]))
			if skip > uint64(len(src)-off-4) {
				return p.cut()
			}
			off += 4 + int(skip)
			continue
		case magic != lz4Magic:
			return p.cut()
		}
		// Descriptor: FLG, BD, then a content size and a dictionary ID
		// if FLG says so, then the header checksum.
		if len(src)-off < 3 {
			return p.cut()
		}
		flg, bd := src[off], src[off+1]
		block := lz4BlockMax(bd)
		if block == 0 {
			return p.cut()
		}
		hold := 2 * block
		if flg&0x20 == 0 {
			hold += block + lz4DictSlack
			p.linked = true
		}
		p.hold = max(p.hold, hold)
		off += 3
		if flg&0x08 != 0 {
			off += 8
		}
		if flg&0x01 != 0 {
			off += 4
		}
		// Data blocks up to the end mark, then the content checksum.
		for {
			if len(src)-off < 4 {
				return p.cut()
			}
			x := binary.LittleEndian.Uint32(src[off:])
			off += 4
			if x == 0 {
				break
			}
			n := int(x & 0x7FFFFFFF)
			if n > block || n > len(src)-off {
				return p.cut()
			}
			off += n
			if flg&0x10 != 0 {
				off += 4
			}
		}
		if flg&0x04 != 0 {
			off += 4
		}
	}
	if off != len(src) {
		return p.cut()
	}
	return p
}

// cut is the plan of a walk stopped short, where the Reader fails too:
// counted as linked, so that whatever the Reader did decode is not
// trusted to have left its dictionary empty.
func (p lz4Plan) cut() lz4Plan {
	p.linked = true
	return p
}
