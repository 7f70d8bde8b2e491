package transport

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzFrameDecode feeds arbitrary bytes through the framing and header
// decoder: it must never panic, and whatever it admits must be inside the
// version table and re-encode to a frame that decodes again.
func FuzzFrameDecode(f *testing.F) {
	fm := kmsg.NewRequestFormatter(kmsg.FormatterClientID("seed"))
	api := kmsg.NewPtrApiVersionsRequest()
	api.Version = 3
	f.Add(fm.AppendRequest(nil, api, 1))
	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 9
	meta.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("orders")}}
	f.Add(fm.AppendRequest(nil, meta, 2))
	f.Add([]byte{0, 0, 0, 6, 0xff, 0xff, 1, 2, 3, 4})
	f.Fuzz(func(t *testing.T, data []byte) {
		frame, err := ReadFrame(bytes.NewReader(data), PreAuthMaxFrame)
		if err != nil {
			return
		}
		q, err := testTable.decode(frame)
		if err != nil {
			return
		}
		if q.hdr.version < q.row.Min || (q.hdr.version > q.row.Max && q.preset == nil) {
			t.Fatalf("admitted %d v%d outside v%d-v%d", q.hdr.key, q.hdr.version, q.row.Min, q.row.Max)
		}
		if q.req == nil {
			return
		}
		again := kmsg.NewRequestFormatter().AppendRequest(nil, q.req, q.hdr.correlationID)
		if _, err := testTable.decode(again[4:]); err != nil {
			t.Fatalf("re-encoded request does not decode: %v", err)
		}
	})
}
