package recordbatch_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/recordbatch"
	"github.com/queen-mq/queen-kafka/recordbatch/batchtest"
)

// FuzzRecordBatchDecode drives the produce-side decoder (parse, CRC,
// decompress, records, envelopes) with arbitrary bytes: it must never panic,
// and what it allocates is bounded by the decompression allowance, which the
// fuzzer keeps small so a bomb shows up as a refusal rather than as memory.
func FuzzRecordBatchDecode(f *testing.F) {
	for _, codec := range []int{recordbatch.CodecNone, recordbatch.CodecGzip, recordbatch.CodecSnappy, recordbatch.CodecLz4, recordbatch.CodecZstd} {
		f.Add(batchtest.Batch{Codec: codec, FirstTS: 1787824800123, Records: batchtest.SampleRecords()}.Encode(f))
	}
	f.Add(batchtest.Batch{Codec: recordbatch.CodecSnappy, Xerial: true, FirstTS: 1, Records: batchtest.SampleRecords()}.Encode(f))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var rb kmsg.RecordBatch
		if recordbatch.ParseProduce(raw, &rb) != nil {
			// The CRC guards everything past the header; decode the body
			// anyway so the fuzzer reaches the record walk without having
			// to forge a checksum.
			if rb.ReadFrom(raw) != nil || rb.NumRecords < 0 || rb.Attributes&recordbatch.AttrCodecMask > recordbatch.CodecZstd {
				return
			}
		}
		d := pool.GetUnpaid()
		defer d.Release()
		const allowance = 1 << 20
		buf, ends, spent, f := d.EnvelopesWithin(&rb, nil, nil, allowance)
		if spent > allowance {
			t.Fatalf("spent %d past the %d allowance", spent, allowance)
		}
		if f == nil && len(ends) != int(rb.NumRecords) {
			t.Fatalf("%d envelopes for %d records", len(ends), rb.NumRecords)
		}
		if f != nil && (len(buf) != 0 || len(ends) != 0) {
			t.Fatalf("a refused batch left %d bytes of envelopes", len(buf))
		}
	})
}
