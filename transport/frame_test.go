package transport

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/queen-mq/queen-kafka/internal/bufpool"
)

// A body's buffer grows with the bytes that arrived: a peer that declares
// 100 MiB and sends ten bytes is charged one chunk, not the declaration.
func TestReadBodyGrowsWithWhatArrived(t *testing.T) {
	var charged []int64
	charge := func(n int64) error { charged = append(charged, n); return nil }
	_, held, err := readBody(bytes.NewReader(make([]byte, 10)), MaxFrame, charge)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a body cut short: err %v, want unexpected EOF", err)
	}
	if held != frameChunk || len(charged) != 1 {
		t.Fatalf("10 bytes of a declared %d charged %d in %v, want one chunk of %d", MaxFrame, held, charged, frameChunk)
	}

	// A whole body is charged exactly its size, in doubling steps.
	body := bytes.Repeat([]byte("0123456789abcdef"), (3<<20)/16+1)
	charged = nil
	got, held, err := readBody(bytes.NewReader(body), int32(len(body)), charge)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("whole body: err %v, %d bytes equal %v", err, len(got), bytes.Equal(got, body))
	}
	if held != int64(len(body)) || len(charged) != 7 || charged[0] != frameChunk {
		t.Fatalf("a %d-byte body charged %d in %v, want its size from one chunk doubling", len(body), held, charged)
	}

	// A refused charge ends the read, reporting what had been charged.
	refused := errors.New("over budget")
	_, held, err = readBody(bytes.NewReader(body), int32(len(body)), func(n int64) error {
		if n > frameChunk {
			return refused
		}
		return nil
	})
	if !errors.Is(err, refused) || held != 2*frameChunk {
		t.Fatalf("a refused charge: err %v, held %d, want %v having held %d", err, held, refused, 2*frameChunk)
	}
	if got, _, err := readBody(bytes.NewReader(nil), 0, nil); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("empty body: %v %v", got, err)
	}
}

// capReader hands out want bytes, noting the most room it was offered to
// read into (the buffer readBody holds), then ends.
type capReader struct {
	want, room int
}

func (r *capReader) Read(p []byte) (int, error) {
	r.room = max(r.room, cap(p))
	if r.want == 0 {
		return 0, io.EOF
	}
	n := min(len(p), r.want)
	r.want -= n
	return n, nil
}

// TestReadBodyLeavesPooledFramesToTheCollector: a free pooled buffer for a
// whole 16 MiB frame is not taken on the strength of its size prefix (it
// would pin 16 MiB the collector frees, for 10 bytes sent), only once a
// quarter of the frame has been charged.
func TestReadBodyLeavesPooledFramesToTheCollector(t *testing.T) {
	const size = 16 << 20
	bufpool.Put(bufpool.Get(size))
	r := &capReader{want: 10}
	if _, _, err := readBody(r, size, nil); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a body cut short: %v", err)
	}
	if r.room > frameChunk {
		t.Fatalf("10 bytes of a declared %d read into %d bytes of buffer, want at most %d", size, r.room, frameChunk)
	}
}

// bufReader hands out a whole body, noting each buffer it is asked to
// read into (by its capacity, from the bytes read before it).
type bufReader struct {
	body []byte
	read int
	bufs []int
}

func (r *bufReader) Read(p []byte) (int, error) {
	if c := r.read + cap(p); len(r.bufs) == 0 || r.bufs[len(r.bufs)-1] != c {
		r.bufs = append(r.bufs, c)
	}
	n := copy(p, r.body[r.read:])
	r.read += n
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// TestReadBodyWholeFrameAtAQuarter: once a quarter of a frame is charged
// the frame is read into a buffer of its whole size, pooled or fresh, not
// doubled through buffers of a quarter to a half of it, which the pools
// kept for nothing else (issue 20: a 6 MB frame went through 2 and 4 MiB
// buffers whenever no free 6 MiB one was there).
func TestReadBodyWholeFrameAtAQuarter(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789abcdef"), (6<<20)/16-5)
	r := &bufReader{body: body}
	got, held, err := readBody(r, int32(len(body)), func(int64) error { return nil })
	if err != nil || !bytes.Equal(got, body) || held != int64(len(body)) {
		t.Fatalf("whole body: err %v, held %d, equal %v", err, held, bytes.Equal(got, body))
	}
	for _, c := range r.bufs[:len(r.bufs)-1] {
		if c > len(body)/4 {
			t.Fatalf("a %d-byte frame was read through buffers of %v bytes: one above a quarter of it before the whole", len(body), r.bufs)
		}
	}
	if last := r.bufs[len(r.bufs)-1]; last < len(body) {
		t.Fatalf("the last buffer holds %d of %d", last, len(body))
	}
	bufpool.Put(got)
}
