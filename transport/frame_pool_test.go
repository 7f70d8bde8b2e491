package transport

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/queen-mq/queen-kafka/internal/bufpool"
)

// TestReadFrameAfterSmallerPooledFrames: frames of 64 KiB given back to the
// pool do not serve a larger frame read after them on the same connection
// (issue 20: with two classes in one pool, readBody took a pooled 64 KiB
// buffer for a 71,470-byte frame and panicked slicing past its capacity).
func TestReadFrameAfterSmallerPooledFrames(t *testing.T) {
	// Four 64 KiB frames, held together as pipelined produce requests are
	// and given back once answered; then frames of the next class up.
	sizes := []int{65536, 65536, 65536, 65536, 71470, 81920, 81921, 65537}
	const pipelined = 4
	var stream []byte
	bodies := make([][]byte, len(sizes))
	for i, n := range sizes {
		bodies[i] = bytes.Repeat([]byte{byte(i + 1)}, n)
		stream = binary.BigEndian.AppendUint32(stream, uint32(n))
		stream = append(stream, bodies[i]...)
	}
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("reading a frame after smaller pooled ones panicked: %v", p)
		}
	}()
	// Rounds: under the race detector sync.Pool drops some of what is put.
	for range 8 {
		r := bytes.NewReader(stream)
		var held [][]byte
		for i := range sizes {
			frame, err := ReadFrame(r, MaxFrame)
			if err != nil {
				t.Fatalf("frame %d of %d bytes: %v", i, sizes[i], err)
			}
			if !bytes.Equal(frame, bodies[i]) {
				t.Fatalf("frame %d of %d bytes read as %d other bytes", i, sizes[i], len(frame))
			}
			held = append(held, frame)
			if i < pipelined-1 {
				continue
			}
			for _, f := range held {
				bufpool.Put(f)
			}
			held = held[:0]
		}
	}
}
