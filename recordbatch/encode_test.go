package recordbatch_test

import (
	"bytes"
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/envelope"
	"github.com/queen-mq/queen-kafka/recordbatch"
	"github.com/queen-mq/queen-kafka/recordbatch/batchtest"
)

var encoder = recordbatch.NewEncoder()

var allCodecs = []int{recordbatch.CodecNone, recordbatch.CodecGzip, recordbatch.CodecSnappy, recordbatch.CodecLz4, recordbatch.CodecZstd}

// compressibleFetched is n stored records of 1 KiB values, half random
// letters and half a repeated phrase, at every other offset.
func compressibleFetched(n int) []recordbatch.Fetched {
	var recs []recordbatch.Fetched
	phrase := bytes.Repeat([]byte("the quick brown fox "), 26)[:512]
	for i, r := range batchtest.BenchRecords(n, 512) {
		v := append(r.Value, phrase...)
		recs = append(recs, recordbatch.Fetched{Offset: int64(100 + 2*i), Record: envelope.Record{Key: r.Key, Value: v, Timestamp: 5000 + int64(i), Headers: []envelope.Header{{Key: "trace", Value: []byte("abc")}}}})
	}
	return recs
}

// readFetchBatch checks one fetch batch's framing and CRC and returns its
// header and its records, decompressed by the produce side's codecs (the
// ones every producer's batches are read with).
func readFetchBatch(t *testing.T, raw []byte) (kmsg.RecordBatch, []kmsg.Record) {
	t.Helper()
	var rb kmsg.RecordBatch
	require.NoError(t, rb.ReadFrom(raw))
	require.Equal(t, int32(len(raw)-recordbatch.LengthBase), rb.Length)
	require.Equal(t, uint32(rb.CRC), crc32.Checksum(raw[recordbatch.CRCFrom:], recordbatch.CRC32C))
	body := rb.Records
	if c := int(rb.Attributes & recordbatch.AttrCodecMask); c != recordbatch.CodecNone {
		var err error
		body, err = pool.Decompress(nil, body, c, maxDecompressed)
		require.NoError(t, err)
	}
	return rb, batchtest.Records(t, body, rb.NumRecords)
}

// TestEncoderCodecs: each codec's batch carries its codec in the
// attributes, is smaller than the plain batch for compressible records,
// and decompresses to the same records, offsets and timestamps.
func TestEncoderCodecs(t *testing.T) {
	recs := compressibleFetched(50)
	plain := recordbatch.AppendFetchBatch(nil, recs)
	for _, codec := range allCodecs {
		t.Run(recordbatch.CodecName(codec), func(t *testing.T) {
			out := encoder.AppendFetchBatch([]byte("prefix"), recs, codec)
			require.Equal(t, "prefix", string(out[:6]))
			raw := out[6:]
			rb, got := readFetchBatch(t, raw)
			require.Equal(t, int16(codec), rb.Attributes, "codec bits, CreateTime, not transactional")
			if codec == recordbatch.CodecNone {
				require.Equal(t, plain, raw)
			} else {
				require.Less(t, len(raw), len(plain)*3/4, "text-like records compress")
			}
			require.Equal(t, int64(100), rb.FirstOffset)
			require.Equal(t, int32(98), rb.LastOffsetDelta)
			require.Equal(t, int64(5000), rb.FirstTimestamp)
			require.Equal(t, int64(5049), rb.MaxTimestamp)
			require.Equal(t, int64(-1), rb.ProducerID)
			require.Len(t, got, len(recs))
			for i, r := range got {
				require.Equal(t, int32(2*i), r.OffsetDelta)
				require.Equal(t, recs[i].Record.Timestamp, rb.FirstTimestamp+r.TimestampDelta64)
				require.Equal(t, recs[i].Record.Key, r.Key)
				require.Equal(t, recs[i].Record.Value, r.Value)
				require.Equal(t, []kmsg.Header{{Key: "trace", Value: []byte("abc")}}, r.Headers)
			}
		})
	}
}

// TestEncoderNeverGrows: records that do not compress go out
// uncompressed, byte for byte the plain batch, so a compressed answer is
// never larger than the budgets (which count records uncompressed) allow.
func TestEncoderNeverGrows(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	noise := make([]byte, 4096)
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	recs := []recordbatch.Fetched{{Offset: 7, Record: envelope.Record{Value: noise, Timestamp: 1}}}
	plain := recordbatch.AppendFetchBatch(nil, recs)
	for _, codec := range allCodecs {
		require.Equal(t, plain, encoder.AppendFetchBatch(nil, recs, codec), recordbatch.CodecName(codec))
	}
	require.Empty(t, encoder.AppendFetchBatch(nil, nil, recordbatch.CodecLz4), "no records, no batch")
}

// TestEncoderConcurrent: one Encoder serves concurrent fetches (its pools
// and the shared zstd encoder), each batch its own records.
func TestEncoderConcurrent(t *testing.T) {
	recs := compressibleFetched(20)
	done := make(chan []byte)
	for i := range 8 {
		go func() {
			var out []byte
			for range 20 {
				out = encoder.AppendFetchBatch(out[:0], recs[i:], allCodecs[i%len(allCodecs)])
			}
			done <- out
		}()
	}
	for range 8 {
		_, got := readFetchBatch(t, <-done)
		require.Equal(t, recs[len(recs)-1].Record.Value, got[len(got)-1].Value)
	}
}

func TestCodecNames(t *testing.T) {
	for _, codec := range allCodecs {
		c, ok := recordbatch.CodecByName(recordbatch.CodecName(codec))
		require.True(t, ok)
		require.Equal(t, codec, c)
	}
	for _, bad := range []string{"", "LZ4", "none", "producer", "brotli"} {
		_, ok := recordbatch.CodecByName(bad)
		require.False(t, ok, bad)
	}
	require.Equal(t, int16(10), recordbatch.MinFetchVersion(recordbatch.CodecZstd))
	require.Zero(t, recordbatch.MinFetchVersion(recordbatch.CodecLz4))
}

// FuzzEncoderBound: whatever the records, a codec's batch reads back to
// them and is never longer than the plain batch. One codec per input
// (codec): the codecs' instrumented state resets are what a run spends.
func FuzzEncoderBound(f *testing.F) {
	for _, codec := range allCodecs {
		f.Add([]byte("k"), bytes.Repeat([]byte("abc"), 200), uint8(3), int64(9), uint8(codec))
		f.Add([]byte{}, []byte{0xff, 0, 1}, uint8(1), int64(-1), uint8(codec))
	}
	f.Fuzz(func(t *testing.T, key, value []byte, n uint8, ts int64, codec uint8) {
		var recs []recordbatch.Fetched
		for i := range int(n%16) + 1 {
			recs = append(recs, recordbatch.Fetched{Offset: int64(i * 3), Record: envelope.Record{Key: key, Value: value[:len(value)*i/16], Timestamp: ts + int64(i)}})
		}
		plain := recordbatch.AppendFetchBatch(nil, recs)
		c := allCodecs[int(codec)%len(allCodecs)]
		out := encoder.AppendFetchBatch(nil, recs, c)
		require.LessOrEqual(t, len(out), len(plain), "codec %d", c)
		_, got := readFetchBatch(t, out)
		require.Len(t, got, len(recs))
		for i := range got {
			require.Equal(t, recs[i].Record.Key, got[i].Key)
			require.Equal(t, recs[i].Record.Value, got[i].Value)
		}
	})
}

// BenchmarkFetchEncodeCodecs is the fetch encoder's CPU per codec for 100
// records of 1 KiB (half random letters, half a repeated phrase).
func BenchmarkFetchEncodeCodecs(b *testing.B) {
	recs := compressibleFetched(100)
	for _, codec := range allCodecs {
		b.Run(recordbatch.CodecName(codec), func(b *testing.B) {
			b.SetBytes(100 * 1024)
			b.ReportAllocs()
			var out []byte
			for b.Loop() {
				out = encoder.AppendFetchBatch(out[:0], recs, codec)
			}
			b.ReportMetric(float64(len(out))/100, "wire-B/record")
		})
	}
}
