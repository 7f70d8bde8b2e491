package batchtest

import (
	"bytes"
	stdgzip "compress/gzip"
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy/xerial"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/recordbatch"
)

// Batch describes a produce batch to encode.
type Batch struct {
	Codec    int
	Xerial   bool // snappy with the Java stream framing
	FirstTS  int64
	Attrs    int16 // extra attribute bits
	Idem     bool  // carries pid/epoch/firstSeq (otherwise producer id -1)
	PID      int64
	Epoch    int16
	FirstSeq int32
	Records  []kmsg.Record
}

// Compress is raw compressed with codec, as a producer compresses a batch's
// records.
func Compress(t testing.TB, codec int, xer bool, raw []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	switch codec {
	case recordbatch.CodecNone:
		return raw
	case recordbatch.CodecGzip:
		w := stdgzip.NewWriter(&b)
		_, _ = w.Write(raw)
		require.NoError(t, w.Close())
	case recordbatch.CodecSnappy:
		if xer {
			return xerial.Encode(nil, raw)
		}
		return s2.EncodeSnappy(nil, raw)
	case recordbatch.CodecLz4:
		w := lz4.NewWriter(&b)
		_, _ = w.Write(raw)
		require.NoError(t, w.Close())
	case recordbatch.CodecZstd:
		w, err := zstd.NewWriter(&b)
		require.NoError(t, err)
		_, _ = w.Write(raw)
		require.NoError(t, w.Close())
	}
	return b.Bytes()
}

// Encode builds the wire form of tb the way a producer does, CRC included.
func (tb Batch) Encode(t testing.TB) []byte {
	t.Helper()
	var raw []byte
	for i := range tb.Records {
		r := tb.Records[i]
		r.OffsetDelta = int32(i)
		raw = recordbatch.AppendRecord(raw, &r)
	}
	pid := tb.PID
	if !tb.Idem {
		pid = -1
	}
	rb := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           int16(tb.Codec) | tb.Attrs,
		LastOffsetDelta:      int32(len(tb.Records) - 1),
		FirstTimestamp:       tb.FirstTS,
		MaxTimestamp:         tb.FirstTS,
		ProducerID:           pid,
		ProducerEpoch:        tb.Epoch,
		FirstSequence:        tb.FirstSeq,
		NumRecords:           int32(len(tb.Records)),
		Records:              Compress(t, tb.Codec, tb.Xerial, raw),
	}
	if pid < 0 {
		rb.ProducerEpoch, rb.FirstSequence = -1, -1
	}
	return recordbatch.Seal(rb.AppendTo(nil))
}

// SampleRecords are three records covering headers (one null), a null key,
// an empty key, a null value and timestamp deltas.
func SampleRecords() []kmsg.Record {
	return []kmsg.Record{
		{Key: []byte("order-42"), Value: []byte(`{"total":12}`), Headers: []kmsg.Header{{Key: "content-type", Value: []byte("application/json")}, {Key: "null-header"}}},
		{Key: nil, Value: []byte{0xff, 0x00, 0x80}, TimestampDelta64: 5},
		{Key: []byte{}, Value: nil, TimestampDelta64: 7},
	}
}

// BenchRecords is n records of size-byte incompressible-ish values with a
// key and a header, the shape of the throughput benchmark's records.
func BenchRecords(n, size int) []kmsg.Record {
	rng := rand.New(rand.NewPCG(1, 2))
	recs := make([]kmsg.Record, n)
	for i := range recs {
		v := make([]byte, size)
		for j := range v {
			v[j] = byte('a' + rng.IntN(16)) // compressible like text, not a run
		}
		recs[i] = kmsg.Record{Key: []byte("key-" + strconv.Itoa(i)), Value: v, TimestampDelta64: int64(i), Headers: []kmsg.Header{{Key: "trace", Value: []byte("abc")}}}
	}
	return recs
}

// bombBatch is a batch of n records whose body is records, compressed.
func bombBatch(codec int, body []byte, n int32) []byte {
	rb := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, Attributes: int16(codec), LastOffsetDelta: n - 1,
		FirstTimestamp: 1, MaxTimestamp: 1, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: n, Records: body}
	return recordbatch.Seal(rb.AppendTo(nil))
}

// GzipZerosBomb is 300 MiB of zeros in a few hundred KiB of gzip.
func GzipZerosBomb(t testing.TB) []byte {
	var b bytes.Buffer
	w, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	require.NoError(t, err)
	zeros := make([]byte, 1<<20)
	for range 300 {
		_, _ = w.Write(zeros)
	}
	require.NoError(t, w.Close())
	return bombBatch(recordbatch.CodecGzip, b.Bytes(), 1)
}

// EmptyRecordsBomb is a million empty records in under a MiB of zstd.
func EmptyRecordsBomb(t testing.TB) []byte {
	const n = 1_000_000
	var raw []byte
	for i := range n {
		raw = recordbatch.AppendRecord(raw, &kmsg.Record{OffsetDelta: int32(i)})
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
	require.NoError(t, err)
	return bombBatch(recordbatch.CodecZstd, enc.EncodeAll(raw, nil), n)
}

// AllocatedBy is what f allocated, in bytes, across the process.
func AllocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// WideWindowZstd is a batch of recs whose zstd frame declares a window of
// window bytes (no content size) over one raw block holding the records: a
// few dozen bytes that a decoder trusting the header sizes its history by.
func WideWindowZstd(t testing.TB, window uint64, recs []kmsg.Record) []byte {
	t.Helper()
	var raw []byte
	for i := range recs {
		r := recs[i]
		r.OffsetDelta = int32(i)
		raw = recordbatch.AppendRecord(raw, &r)
	}
	h := zstd.Header{WindowSize: window}
	frame, err := h.AppendTo(nil)
	require.NoError(t, err)
	return bombBatch(recordbatch.CodecZstd, appendRawBlock(frame, raw), int32(len(recs)))
}

// LyingContentSizeZstd is a batch of one empty record whose single-segment
// zstd frame declares size bytes of content: the window of such a frame is
// its content size.
func LyingContentSizeZstd(t testing.TB, size uint64) []byte {
	t.Helper()
	raw := recordbatch.AppendRecord(nil, &kmsg.Record{})
	h := zstd.Header{SingleSegment: true, HasFCS: true, FrameContentSize: size}
	frame, err := h.AppendTo(nil)
	require.NoError(t, err)
	return bombBatch(recordbatch.CodecZstd, appendRawBlock(frame, raw), 1)
}

// appendRawBlock appends a last, raw zstd block holding data.
func appendRawBlock(dst, data []byte) []byte {
	bh := uint32(1) | uint32(len(data))<<3 // last, raw
	dst = append(dst, byte(bh), byte(bh>>8), byte(bh>>16))
	return append(dst, data...)
}

// Records walks n records out of an uncompressed records body, which they
// must fill exactly.
func Records(t testing.TB, body []byte, n int32) []kmsg.Record {
	t.Helper()
	var recs []kmsg.Record
	for range n {
		l, size := binary.Varint(body)
		require.Positive(t, size, "record length")
		require.LessOrEqual(t, size+int(l), len(body), "record runs past the body")
		var r kmsg.Record
		require.NoError(t, r.ReadFrom(body[:size+int(l)]))
		body = body[size+int(l):]
		recs = append(recs, r)
	}
	require.Empty(t, body)
	return recs
}
