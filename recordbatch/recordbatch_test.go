package recordbatch_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/envelope"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/recordbatch"
	"github.com/queen-mq/queen-kafka/recordbatch/batchtest"
)

// The facade's ceilings: a 100 MiB frame, and a push item and its framing
// per record.
const maxDecompressed = 100 << 20

var pool = recordbatch.NewPool(recordbatch.Limits{Frame: maxDecompressed, ItemOverhead: int(unsafe.Sizeof(queen.PushItem{})) + 48})

// decodeEnvelopes runs the produce-side decoder and reads the envelopes
// back with the fetch-side one.
func decodeEnvelopes(t testing.TB, raw []byte) ([]envelope.Record, *recordbatch.Fault) {
	t.Helper()
	var rb kmsg.RecordBatch
	if f := recordbatch.ParseProduce(raw, &rb); f != nil {
		return nil, f
	}
	d := pool.GetUnpaid()
	defer d.Release()
	buf, ends, _, f := d.EnvelopesWithin(&rb, nil, nil, maxDecompressed)
	if f != nil {
		return nil, f
	}
	var out []envelope.Record
	start := 0
	for _, e := range ends {
		payload := buf[start:e]
		require.True(t, json.Valid(payload), "envelope %q", payload)
		out = append(out, envelope.DecodePayload(payload, time.UnixMilli(1)))
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
		{"none", recordbatch.CodecNone, false},
		{"gzip", recordbatch.CodecGzip, false},
		{"snappy-raw", recordbatch.CodecSnappy, false},
		{"snappy-xerial", recordbatch.CodecSnappy, true},
		{"lz4", recordbatch.CodecLz4, false},
		{"zstd", recordbatch.CodecZstd, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			raw := batchtest.Batch{Codec: tc.codec, Xerial: tc.xerial, FirstTS: 1787824800123, Records: batchtest.SampleRecords()}.Encode(t)
			got, f := decodeEnvelopes(t, raw)
			require.Nil(t, f)
			require.Len(t, got, 3)

			require.Equal(t, []byte("order-42"), got[0].Key)
			require.Equal(t, []byte(`{"total":12}`), got[0].Value)
			require.Equal(t, int64(1787824800123), got[0].Timestamp)
			require.Equal(t, []envelope.Header{{Key: "content-type", Value: []byte("application/json")}, {Key: "null-header"}}, got[0].Headers)
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
	raw := batchtest.Batch{FirstTS: 1787824800123, Attrs: recordbatch.AttrLogAppendTime, Records: batchtest.SampleRecords()[:1]}.Encode(t)
	var rb kmsg.RecordBatch
	require.Nil(t, recordbatch.ParseProduce(raw, &rb))
	d := pool.GetUnpaid()
	defer d.Release()
	buf, _, _, f := d.EnvelopesWithin(&rb, nil, nil, maxDecompressed)
	require.Nil(t, f)
	require.NotContains(t, string(buf), `"t":`, "the append time is Queen's, not a producer's")
}

func TestRecordBatchRefusals(t *testing.T) {
	good := batchtest.Batch{FirstTS: 1, Records: batchtest.SampleRecords()}.Encode(t)

	flip := bytes.Clone(good)
	flip[len(flip)-1] ^= 0x01
	_, f := decodeEnvelopes(t, flip)
	require.NotNil(t, f)
	require.Equal(t, kerr.CorruptMessage.Code, f.Code, "CRC mismatch")

	old := bytes.Clone(good)
	old[recordbatch.MagicOffset] = 1
	_, f = decodeEnvelopes(t, old)
	require.Equal(t, kerr.InvalidRecord.Code, f.Code, "magic 1")

	_, f = decodeEnvelopes(t, append(bytes.Clone(good), good...))
	require.Equal(t, kerr.InvalidRecord.Code, f.Code, "two batches")

	_, f = decodeEnvelopes(t, good[:40])
	require.Equal(t, kerr.CorruptMessage.Code, f.Code, "truncated header")

	_, f = decodeEnvelopes(t, nil)
	require.Equal(t, kerr.InvalidRecord.Code, f.Code, "no batch")

	ctrl := batchtest.Batch{FirstTS: 1, Attrs: recordbatch.AttrControl, Records: batchtest.SampleRecords()}.Encode(t)
	_, f = decodeEnvelopes(t, ctrl)
	require.Equal(t, kerr.InvalidRecord.Code, f.Code, "control batch")

	// NumRecords says more than the body holds: re-seal so the CRC is right.
	short := bytes.Clone(good)
	binary.BigEndian.PutUint32(short[57:], 4)
	_, f = decodeEnvelopes(t, recordbatch.Seal(short))
	require.Equal(t, kerr.CorruptMessage.Code, f.Code, "missing record")

	long := bytes.Clone(good)
	binary.BigEndian.PutUint32(long[57:], 2)
	_, f = decodeEnvelopes(t, recordbatch.Seal(long))
	require.Equal(t, kerr.CorruptMessage.Code, f.Code, "bytes past the records")

	garbage := batchtest.Batch{Codec: recordbatch.CodecGzip, FirstTS: 1, Records: batchtest.SampleRecords()}.Encode(t)
	garbage[recordbatch.HeaderLen+12] ^= 0xff
	_, f = decodeEnvelopes(t, recordbatch.Seal(garbage))
	require.Equal(t, kerr.CorruptMessage.Code, f.Code, "corrupt gzip")
}

// TestRecordBatchDecompressionBomb: a batch whose records decompress past
// the allowance is refused without producing more than the allowance.
func TestRecordBatchDecompressionBomb(t *testing.T) {
	big := make([]byte, 1<<20)
	for _, codec := range []int{recordbatch.CodecGzip, recordbatch.CodecSnappy, recordbatch.CodecLz4, recordbatch.CodecZstd} {
		comp := batchtest.Compress(t, codec, false, big)
		out, err := pool.Decompress(nil, comp, codec, 1<<19)
		require.ErrorIs(t, err, recordbatch.ErrDecompressedTooLarge, "codec %d", codec)
		require.LessOrEqual(t, cap(out), 1<<20, "codec %d allocated past the allowance", codec)
		out, err = pool.Decompress(nil, comp, codec, 1<<20)
		require.NoError(t, err, "codec %d exactly at the allowance", codec)
		require.Len(t, out, 1<<20)
	}
	// A snappy block that claims far more than it can hold is refused on
	// the claim.
	lie := binary.AppendUvarint(nil, 90<<20)
	lie = append(lie, 0x00, 'x')
	_, err := pool.Decompress(nil, lie, recordbatch.CodecSnappy, maxDecompressed)
	require.Error(t, err)

	rec := kmsg.Record{Value: big}
	raw := batchtest.Batch{Codec: recordbatch.CodecZstd, FirstTS: 1, Records: []kmsg.Record{rec}}.Encode(t)
	var rb kmsg.RecordBatch
	require.Nil(t, recordbatch.ParseProduce(raw, &rb))
	d := pool.GetUnpaid()
	defer d.Release()
	_, _, _, f := d.EnvelopesWithin(&rb, nil, nil, 1<<19)
	require.NotNil(t, f)
	require.Equal(t, kerr.MessageTooLarge.Code, f.Code)
}

// TestFetchBatchRoundTrip: the fetch-side encoder writes a batch franz-go's
// own reader accepts, CRC included, with offsets and timestamps preserved.
func TestFetchBatchRoundTrip(t *testing.T) {
	recs := []recordbatch.Fetched{
		{Offset: 41, Record: envelope.Record{Key: []byte("k"), Value: []byte("v1"), Timestamp: 1000, Headers: []envelope.Header{{Key: "h", Value: []byte("x")}}}},
		{Offset: 42, Record: envelope.Record{Key: nil, Value: nil, Timestamp: 900}},
		{Offset: 45, Record: envelope.Record{Key: []byte{}, Value: bytes.Repeat([]byte("z"), 300), Timestamp: 1200}},
	}
	out := recordbatch.AppendFetchBatch([]byte("prefix"), recs)
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
	require.Equal(t, uint32(rb.CRC), crc32.Checksum(raw[recordbatch.CRCFrom:], recordbatch.CRC32C))
	require.Equal(t, int32(len(raw)-recordbatch.LengthBase), rb.Length)

	body := rb.Records
	for i, want := range recs {
		l, n := binary.Varint(body)
		var r kmsg.Record
		require.NoError(t, r.ReadFrom(body[:n+int(l)]))
		body = body[n+int(l):]
		require.Equal(t, int32(want.Offset-41), r.OffsetDelta, "record %d", i)
		require.Equal(t, want.Record.Timestamp, rb.FirstTimestamp+r.TimestampDelta64)
		require.Equal(t, want.Record.Key, r.Key)
		require.Equal(t, want.Record.Value, r.Value)
	}
	require.Empty(t, body)
	require.Equal(t, []kmsg.Header{{Key: "h", Value: []byte("x")}}, func() []kmsg.Header {
		l, n := binary.Varint(rb.Records)
		var r kmsg.Record
		_ = r.ReadFrom(rb.Records[:n+int(l)])
		return r.Headers
	}())
}

// RecordBytes is what the records weigh as sent — keys, values, header
// names and values — however the batch was compressed, and nothing for a
// refused batch.
func TestRecordBytes(t *testing.T) {
	want := int64(0)
	for _, r := range batchtest.SampleRecords() {
		want += int64(len(r.Key) + len(r.Value))
		for _, h := range r.Headers {
			want += int64(len(h.Key) + len(h.Value))
		}
	}
	for _, codec := range []int{recordbatch.CodecNone, recordbatch.CodecZstd} {
		var rb kmsg.RecordBatch
		require.Nil(t, recordbatch.ParseProduce(batchtest.Batch{Codec: codec, FirstTS: 1, Records: batchtest.SampleRecords()}.Encode(t), &rb))
		d := pool.GetUnpaid()
		d.StartRequest()
		_, _, f := d.Envelopes(&rb, "orders", nil, nil)
		require.Nil(t, f)
		require.Equal(t, want, d.RecordBytes(), "codec %d", codec)
		rb.NumRecords++ // one record more than the body holds
		_, _, f = d.Envelopes(&rb, "orders", nil, nil)
		require.NotNil(t, f)
		require.Zero(t, d.RecordBytes(), "a refused batch weighs nothing")
		d.Release()
	}
}
