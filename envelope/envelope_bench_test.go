package envelope

import (
	"testing"
	"time"
)

func BenchmarkDecodePayload(b *testing.B) {
	v := make([]byte, 1024)
	for i := range v {
		v[i] = byte(i)
	}
	p := Append(nil, &Record{Key: []byte("bench-key"), Value: v, Timestamp: 1787824800123,
		Headers: []Header{{Key: "content-type", Value: []byte("application/octet-stream")}}})
	ts := time.Now()
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	for b.Loop() {
		r := DecodePayload(p, ts)
		if len(r.Value) != 1024 {
			b.Fatal("bad decode")
		}
	}
}

func BenchmarkAppendEnvelope(b *testing.B) {
	v := make([]byte, 1024)
	r := &Record{Key: []byte("bench-key"), Value: v, Timestamp: 1787824800123,
		Headers: []Header{{Key: "content-type", Value: []byte("application/octet-stream")}}}
	buf := make([]byte, 0, 2048)
	b.ReportAllocs()
	for b.Loop() {
		buf = Append(buf[:0], r)
	}
}
