package node

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy/xerial"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen"
)

// testBatch describes a produce batch to encode.
type testBatch struct {
	codec    int
	xerial   bool // snappy with the Java stream framing
	firstTS  int64
	attrs    int16 // extra attribute bits
	idem     bool  // carries pid/epoch/firstSeq (otherwise producer id -1)
	pid      int64
	epoch    int16
	firstSeq int32
	records  []kmsg.Record
}

func compressFor(t testing.TB, codec int, xer bool, raw []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	switch codec {
	case codecNone:
		return raw
	case codecGzip:
		w := gzip.NewWriter(&b)
		_, _ = w.Write(raw)
		require.NoError(t, w.Close())
	case codecSnappy:
		if xer {
			return xerial.Encode(nil, raw)
		}
		return s2.EncodeSnappy(nil, raw)
	case codecLz4:
		w := lz4.NewWriter(&b)
		_, _ = w.Write(raw)
		require.NoError(t, w.Close())
	case codecZstd:
		w, err := zstd.NewWriter(&b)
		require.NoError(t, err)
		_, _ = w.Write(raw)
		require.NoError(t, w.Close())
	}
	return b.Bytes()
}

// encode builds the wire form of tb the way a producer does, CRC included.
func (tb testBatch) encode(t testing.TB) []byte {
	t.Helper()
	var raw []byte
	for i := range tb.records {
		r := tb.records[i]
		r.OffsetDelta = int32(i)
		raw = appendRecord(raw, &r)
	}
	pid := tb.pid
	if !tb.idem {
		pid = -1
	}
	rb := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           int16(tb.codec) | tb.attrs,
		LastOffsetDelta:      int32(len(tb.records) - 1),
		FirstTimestamp:       tb.firstTS,
		MaxTimestamp:         tb.firstTS,
		ProducerID:           pid,
		ProducerEpoch:        tb.epoch,
		FirstSequence:        tb.firstSeq,
		NumRecords:           int32(len(tb.records)),
		Records:              compressFor(t, tb.codec, tb.xerial, raw),
	}
	if pid < 0 {
		rb.ProducerEpoch, rb.FirstSequence = -1, -1
	}
	return sealBatch(rb.AppendTo(nil))
}

// sealBatch fills in Length and CRC of an encoded batch.
func sealBatch(b []byte) []byte {
	binary.BigEndian.PutUint32(b[batchLengthOffset:], uint32(len(b)-batchLengthBase))
	binary.BigEndian.PutUint32(b[batchCRCOffset:], crc32.Checksum(b[batchCRCFrom:], crc32c))
	return b
}

func sampleRecords() []kmsg.Record {
	return []kmsg.Record{
		{Key: []byte("order-42"), Value: []byte(`{"total":12}`), Headers: []kmsg.Header{{Key: "content-type", Value: []byte("application/json")}, {Key: "null-header"}}},
		{Key: nil, Value: []byte{0xff, 0x00, 0x80}, TimestampDelta64: 5},
		{Key: []byte{}, Value: nil, TimestampDelta64: 7},
	}
}

// decodeEnvelopes runs the produce-side decoder and reads the envelopes
// back with the fetch-side one.
func decodeEnvelopes(t testing.TB, raw []byte) ([]queen.Record, *batchFault) {
	t.Helper()
	var rb kmsg.RecordBatch
	if f := parseProduceBatch(raw, &rb); f != nil {
		return nil, f
	}
	d := batchDecoders.Get().(*batchDecoder)
	defer d.release()
	buf, ends, _, f := d.envelopes(&rb, nil, nil, maxDecompressed)
	if f != nil {
		return nil, f
	}
	var out []queen.Record
	start := 0
	for _, e := range ends {
		payload := buf[start:e]
		require.True(t, json.Valid(payload), "envelope %q", payload)
		out = append(out, queen.DecodePayload(payload, time.UnixMilli(1)))
		start = e
	}
	return out, nil
}

func TestRecordBatchDecodeAllCodecs(t *testing.T) {
	cases := []struct {
		name   string
		codec  int
		xerial bool
	}{
		{"none", codecNone, false},
		{"gzip", codecGzip, false},
		{"snappy-raw", codecSnappy, false},
		{"snappy-xerial", codecSnappy, true},
		{"lz4", codecLz4, false},
		{"zstd", codecZstd, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			raw := testBatch{codec: tc.codec, xerial: tc.xerial, firstTS: 1787824800123, records: sampleRecords()}.encode(t)
			got, f := decodeEnvelopes(t, raw)
			require.Nil(t, f)
			require.Len(t, got, 3)

			require.Equal(t, []byte("order-42"), got[0].Key)
			require.Equal(t, []byte(`{"total":12}`), got[0].Value)
			require.Equal(t, int64(1787824800123), got[0].Timestamp)
			require.Equal(t, []queen.Header{{Key: "content-type", Value: []byte("application/json")}, {Key: "null-header"}}, got[0].Headers)
			require.Nil(t, got[0].Headers[1].Value, "a null header value stays null")

			require.Nil(t, got[1].Key, "null key stays null")
			require.Equal(t, []byte{0xff, 0x00, 0x80}, got[1].Value)
			require.Equal(t, int64(1787824800128), got[1].Timestamp)

			require.NotNil(t, got[2].Key, "empty key is not null")
			require.Empty(t, got[2].Key)
			require.Nil(t, got[2].Value, "null value stays null")
			require.Equal(t, int64(1787824800130), got[2].Timestamp)
		})
	}
}

func TestRecordBatchLogAppendTimeOmitsTimestamp(t *testing.T) {
	raw := testBatch{firstTS: 1787824800123, attrs: attrLogAppendTime, records: sampleRecords()[:1]}.encode(t)
	var rb kmsg.RecordBatch
	require.Nil(t, parseProduceBatch(raw, &rb))
	d := batchDecoders.Get().(*batchDecoder)
	defer d.release()
	buf, _, _, f := d.envelopes(&rb, nil, nil, maxDecompressed)
	require.Nil(t, f)
	require.NotContains(t, string(buf), `"t":`, "the append time is Queen's, not a producer's")
}

func TestRecordBatchRefusals(t *testing.T) {
	good := testBatch{firstTS: 1, records: sampleRecords()}.encode(t)

	flip := bytes.Clone(good)
	flip[len(flip)-1] ^= 0x01
	_, f := decodeEnvelopes(t, flip)
	require.NotNil(t, f)
	require.Equal(t, kerr.CorruptMessage.Code, f.code, "CRC mismatch")

	old := bytes.Clone(good)
	old[batchMagicOffset] = 1
	_, f = decodeEnvelopes(t, old)
	require.Equal(t, kerr.InvalidRecord.Code, f.code, "magic 1")

	_, f = decodeEnvelopes(t, append(bytes.Clone(good), good...))
	require.Equal(t, kerr.InvalidRecord.Code, f.code, "two batches")

	_, f = decodeEnvelopes(t, good[:40])
	require.Equal(t, kerr.CorruptMessage.Code, f.code, "truncated header")

	_, f = decodeEnvelopes(t, nil)
	require.Equal(t, kerr.InvalidRecord.Code, f.code, "no batch")

	ctrl := testBatch{firstTS: 1, attrs: attrControl, records: sampleRecords()}.encode(t)
	_, f = decodeEnvelopes(t, ctrl)
	require.Equal(t, kerr.InvalidRecord.Code, f.code, "control batch")

	// NumRecords says more than the body holds: re-seal so the CRC is right.
	short := bytes.Clone(good)
	binary.BigEndian.PutUint32(short[57:], 4)
	_, f = decodeEnvelopes(t, sealBatch(short))
	require.Equal(t, kerr.CorruptMessage.Code, f.code, "missing record")

	long := bytes.Clone(good)
	binary.BigEndian.PutUint32(long[57:], 2)
	_, f = decodeEnvelopes(t, sealBatch(long))
	require.Equal(t, kerr.CorruptMessage.Code, f.code, "bytes past the records")

	garbage := testBatch{codec: codecGzip, firstTS: 1, records: sampleRecords()}.encode(t)
	garbage[batchHeaderLen+12] ^= 0xff
	_, f = decodeEnvelopes(t, sealBatch(garbage))
	require.Equal(t, kerr.CorruptMessage.Code, f.code, "corrupt gzip")
}

// TestRecordBatchDecompressionBomb: a batch whose records decompress past
// the allowance is refused without producing more than the allowance.
func TestRecordBatchDecompressionBomb(t *testing.T) {
	big := make([]byte, 1<<20)
	for _, codec := range []int{codecGzip, codecSnappy, codecLz4, codecZstd} {
		comp := compressFor(t, codec, false, big)
		out, err := codecs.decompress(nil, comp, codec, 1<<19, freeGrowth)
		require.ErrorIs(t, err, errDecompressedTooLarge, "codec %d", codec)
		require.LessOrEqual(t, cap(out), 1<<20, "codec %d allocated past the allowance", codec)
		out, err = codecs.decompress(nil, comp, codec, 1<<20, freeGrowth)
		require.NoError(t, err, "codec %d exactly at the allowance", codec)
		require.Len(t, out, 1<<20)
	}
	// A snappy block that claims far more than it can hold is refused on
	// the claim.
	lie := binary.AppendUvarint(nil, 90<<20)
	lie = append(lie, 0x00, 'x')
	_, err := codecs.decompress(nil, lie, codecSnappy, maxDecompressed, freeGrowth)
	require.Error(t, err)

	rec := kmsg.Record{Value: big}
	raw := testBatch{codec: codecZstd, firstTS: 1, records: []kmsg.Record{rec}}.encode(t)
	var rb kmsg.RecordBatch
	require.Nil(t, parseProduceBatch(raw, &rb))
	d := batchDecoders.Get().(*batchDecoder)
	defer d.release()
	_, _, _, f := d.envelopes(&rb, nil, nil, 1<<19)
	require.NotNil(t, f)
	require.Equal(t, kerr.MessageTooLarge.Code, f.code)
}

// TestFetchBatchRoundTrip: the fetch-side encoder writes a batch franz-go's
// own reader accepts, CRC included, with offsets and timestamps preserved.
func TestFetchBatchRoundTrip(t *testing.T) {
	recs := []fetchedRecord{
		{offset: 41, rec: queen.Record{Key: []byte("k"), Value: []byte("v1"), Timestamp: 1000, Headers: []queen.Header{{Key: "h", Value: []byte("x")}}}},
		{offset: 42, rec: queen.Record{Key: nil, Value: nil, Timestamp: 900}},
		{offset: 45, rec: queen.Record{Key: []byte{}, Value: bytes.Repeat([]byte("z"), 300), Timestamp: 1200}},
	}
	out := appendFetchBatch([]byte("prefix"), recs)
	require.Equal(t, "prefix", string(out[:6]))
	raw := out[6:]
	var rb kmsg.RecordBatch
	require.NoError(t, rb.ReadFrom(raw))
	require.Equal(t, int64(41), rb.FirstOffset)
	require.Equal(t, int32(4), rb.LastOffsetDelta)
	require.Equal(t, int64(1000), rb.FirstTimestamp)
	require.Equal(t, int64(1200), rb.MaxTimestamp)
	require.Equal(t, int64(-1), rb.ProducerID)
	require.Equal(t, int32(-1), rb.PartitionLeaderEpoch)
	require.Equal(t, uint32(rb.CRC), crc32.Checksum(raw[batchCRCFrom:], crc32c))
	require.Equal(t, int32(len(raw)-batchLengthBase), rb.Length)

	body := rb.Records
	for i, want := range recs {
		l, n := binary.Varint(body)
		var r kmsg.Record
		require.NoError(t, r.ReadFrom(body[:n+int(l)]))
		body = body[n+int(l):]
		require.Equal(t, int32(want.offset-41), r.OffsetDelta, "record %d", i)
		require.Equal(t, want.rec.Timestamp, rb.FirstTimestamp+r.TimestampDelta64)
		require.Equal(t, want.rec.Key, r.Key)
		require.Equal(t, want.rec.Value, r.Value)
	}
	require.Empty(t, body)
	require.Equal(t, []kmsg.Header{{Key: "h", Value: []byte("x")}}, func() []kmsg.Header {
		l, n := binary.Varint(rb.Records)
		var r kmsg.Record
		_ = r.ReadFrom(rb.Records[:n+int(l)])
		return r.Headers
	}())
}
