package recordbatch

import "github.com/twmb/franz-go/pkg/kmsg"

// What the package's external tests reach inside for.
const (
	MagicOffset = batchMagicOffset
	CRCFrom     = batchCRCFrom
)

var (
	CRC32C                  = crc32c
	ErrDecompressedTooLarge = errDecompressedTooLarge
)

// Lz4MaxHold is the most an lz4 batch is charged for its Reader's buffers.
const Lz4MaxHold = lz4MaxHold

// Decompress runs p's decompressors with limit, paying nothing.
func (p *Pool) Decompress(dst, src []byte, codec, limit int) ([]byte, error) {
	return p.codecs.decompress(dst, src, codec, limit, freeGrowth, freeGrowth)
}

// GetUnpaid is a decoder that pays nothing on the budget, as the codec's
// own tests, fuzz target and benchmark decode.
func (p *Pool) GetUnpaid() *Decoder {
	d := p.decoders.Get().(*Decoder)
	d.claim = nil
	return d
}

// EnvelopesWithin decodes rb under an explicit allowance and returns what
// it spent.
func (d *Decoder) EnvelopesWithin(rb *kmsg.RecordBatch, buf []byte, ends []int, allowance int) ([]byte, []int, int, *Fault) {
	return d.envelopes(rb, buf, ends, allowance)
}

// DecompressPaying runs p's decompressors with limit, asking pay before
// the output grows to a capacity and payWindow for what the decompressor
// holds (a zstd history, lz4 block buffers).
func (p *Pool) DecompressPaying(dst, src []byte, codec, limit int, pay, payWindow func(int) error) ([]byte, error) {
	return p.codecs.decompress(dst, src, codec, limit, pay, payWindow)
}
