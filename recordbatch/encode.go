package recordbatch

import (
	"io"
	"runtime"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Codec names as Kafka's compression.type spells them, by codec. The
// producer value is the topic config's, not a codec (package node).
var codecNames = [...]string{CodecNone: "uncompressed", CodecGzip: "gzip", CodecSnappy: "snappy", CodecLz4: "lz4", CodecZstd: "zstd"}

// CodecName is Kafka's name of codec c ("uncompressed" for CodecNone).
func CodecName(c int) string {
	if c < 0 || c >= len(codecNames) {
		return ""
	}
	return codecNames[c]
}

// CodecByName is the codec Kafka's compression.type name stands for;
// "uncompressed" is CodecNone. Names are case-sensitive, as Kafka's are.
func CodecByName(name string) (int, bool) {
	for c, n := range codecNames {
		if n == name {
			return c, true
		}
	}
	return 0, false
}

// MinFetchVersion is the lowest Fetch version that may carry a batch
// compressed with c: zstd needs v10 (KIP-110), every other codec of a v2
// batch any version that reads one.
func MinFetchVersion(c int) int16 {
	if c == CodecZstd {
		return 10
	}
	return 0
}

// Encoder encodes the stored records of a fetch answer as one RecordBatch
// v2, compressed with the codec the caller names. It keeps the codecs'
// writers and its scratch buffers in pools, so one Encoder serves every
// fetch of a process concurrently.
//
// Compression never makes an answer larger: a batch whose compressed
// records are not smaller than the plain ones goes out uncompressed (any
// batch may), so the caller's byte budgets, which count the records
// uncompressed, bound a compressed answer too.
type Encoder struct {
	scratch sync.Pool // *[]byte: a batch's plain records
	gzip    sync.Pool // *gzip.Writer
	lz4     sync.Pool // *lz4.Writer
	zstd    func() *zstd.Encoder
}

// NewEncoder is an Encoder; the zstd encoder is built on first use.
func NewEncoder() *Encoder {
	return &Encoder{zstd: sync.OnceValue(func() *zstd.Encoder {
		// EncodeAll is safe for concurrent use; each of its concurrent
		// encoders holds a window, so there are no more than the cores.
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)), zstd.WithEncoderLevel(zstd.SpeedDefault))
		if err != nil {
			panic("zstd encoder with constant options: " + err.Error())
		}
		return enc
	})}
}

// AppendFetchBatch appends recs (ascending offsets, gaps allowed) as ONE
// RecordBatch v2 whose records are compressed with codec (CodecNone: not
// compressed): base offset the first record's, offset deltas from the
// offsets, first and max timestamps, no producer (-1) and leader epoch -1,
// as every consumer reads an idempotent-free log.
func (e *Encoder) AppendFetchBatch(dst []byte, recs []Fetched, codec int) []byte {
	if len(recs) == 0 {
		return dst
	}
	if codec <= CodecNone || codec >= len(codecNames) {
		return AppendFetchBatch(dst, recs)
	}
	sp, _ := e.scratch.Get().(*[]byte)
	if sp == nil {
		sp = new([]byte)
	}
	plain := appendRecords((*sp)[:0], recs)
	at := len(dst)
	dst = appendFetchHeader(dst, recs, codec)
	dst = e.compress(dst, plain, codec)
	if len(dst)-at-HeaderLen >= len(plain) {
		// Not smaller: the same records, uncompressed.
		dst = append(appendFetchHeader(dst[:at], recs, CodecNone), plain...)
	}
	if cap(plain) <= scratchKeep {
		*sp = plain[:0]
		e.scratch.Put(sp)
	}
	Seal(dst[at:])
	return dst
}

// AppendFetchBatch appends recs as one uncompressed batch (see
// Encoder.AppendFetchBatch).
func AppendFetchBatch(dst []byte, recs []Fetched) []byte {
	if len(recs) == 0 {
		return dst
	}
	at := len(dst)
	dst = appendRecords(appendFetchHeader(dst, recs, CodecNone), recs)
	Seal(dst[at:])
	return dst
}

// appendFetchHeader appends the batch header of recs, Length and CRC
// left for Seal.
func appendFetchHeader(dst []byte, recs []Fetched, codec int) []byte {
	base, first := recs[0].Offset, recs[0].Record.Timestamp
	maxTS := first
	for i := range recs {
		maxTS = max(maxTS, recs[i].Record.Timestamp)
	}
	rb := kmsg.RecordBatch{
		FirstOffset:          base,
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           int16(codec),
		LastOffsetDelta:      int32(recs[len(recs)-1].Offset - base),
		FirstTimestamp:       first,
		MaxTimestamp:         maxTS,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(len(recs)),
	}
	return rb.AppendTo(dst)
}

// appendRecords appends recs as a batch's records, relative to the first.
func appendRecords(dst []byte, recs []Fetched) []byte {
	base, first := recs[0].Offset, recs[0].Record.Timestamp
	var hdrs []kmsg.Header
	for i := range recs {
		r := &recs[i].Record
		hdrs = hdrs[:0]
		for _, h := range r.Headers {
			hdrs = append(hdrs, kmsg.Header{Key: h.Key, Value: h.Value})
		}
		kr := kmsg.Record{
			TimestampDelta64: r.Timestamp - first,
			OffsetDelta:      int32(recs[i].Offset - base),
			Key:              r.Key,
			Value:            r.Value,
			Headers:          hdrs,
		}
		dst = AppendRecord(dst, &kr)
	}
	return dst
}

// appendWriter is an io.Writer appending to b, for the streaming codecs.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// compress appends plain compressed with codec to dst, as Kafka producers
// frame each codec: a gzip stream, a raw Snappy block (what franz-go and
// librdkafka send, and what every client reads besides the xerial
// framing), an LZ4 frame, a zstd frame.
func (e *Encoder) compress(dst, plain []byte, codec int) []byte {
	switch codec {
	case CodecGzip:
		w := &appendWriter{b: dst}
		gz, _ := e.gzip.Get().(*gzip.Writer)
		if gz == nil {
			gz = gzip.NewWriter(w)
		} else {
			gz.Reset(w)
		}
		// Writes to an appendWriter cannot fail.
		_, _ = gz.Write(plain)
		_ = gz.Close()
		gz.Reset(io.Discard) // not to pin the answer while pooled
		e.gzip.Put(gz)
		return w.b
	case CodecSnappy:
		at := len(dst)
		if n := s2.MaxEncodedLen(len(plain)); n > 0 {
			dst = growTo(dst, at+n)
			return dst[:at+len(s2.EncodeSnappy(dst[at:at+n], plain))]
		}
		// Too large for one block: plain is sent instead, by the caller.
		return append(dst, plain...)
	case CodecLz4:
		w := &appendWriter{b: dst}
		lw, _ := e.lz4.Get().(*lz4.Writer)
		if lw == nil {
			lw = lz4.NewWriter(w)
			// 64 KiB blocks, as Kafka's Java producer and librdkafka
			// write them: a pooled writer then holds little, where the
			// library's default 4 MiB blocks cost megabytes per writer.
			_ = lw.Apply(lz4.BlockSizeOption(lz4.Block64Kb))
		} else {
			lw.Reset(w)
		}
		_, _ = lw.Write(plain)
		_ = lw.Close()
		lw.Reset(io.Discard)
		e.lz4.Put(lw)
		return w.b
	case CodecZstd:
		return e.zstd().EncodeAll(plain, dst)
	}
	return append(dst, plain...)
}

// growTo is b with capacity for n bytes, its contents kept.
func growTo(b []byte, n int) []byte {
	if cap(b) >= n {
		return b
	}
	nb := make([]byte, len(b), n)
	copy(nb, b)
	return nb
}
