package dev

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// stallingBody yields first, then stalls as a silent peer does until
// release is closed, then ends.
type stallingBody struct {
	first   []byte
	stalled chan struct{}
	release chan struct{}
}

func (s *stallingBody) Read(p []byte) (int, error) {
	if len(s.first) > 0 {
		n := copy(p, s.first)
		s.first = s.first[n:]
		return n, nil
	}
	if s.stalled != nil {
		close(s.stalled)
		s.stalled = nil
	}
	<-s.release
	return 0, io.EOF
}

// TestDeclaredBodyLengthIsNotAllocated: a body buffer was sized by the
// declared Content-Length before any of the body arrived, so a peer
// declaring the 64 MiB maxBody and sending a byte held 64 MiB for as long
// as it stayed silent. On an owned (push) and a pooled (kv) route such a
// request now holds a small buffer while it stalls, and is answered as
// before once it ends.
func TestDeclaredBodyLengthIsNotAllocated(t *testing.T) {
	b, err := New(Options{SweepInterval: -1})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	h := b.Handler()
	for _, path := range []string{"/api/v1/push", "/api/v1/kv"} {
		// stalled is kept here: Read clears the field once it has closed
		// it, and a receive on the cleared field would wait forever.
		stalled := make(chan struct{})
		body := &stallingBody{first: []byte("{"), stalled: stalled, release: make(chan struct{})}
		req := httptest.NewRequest(http.MethodPost, path, body)
		req.ContentLength = DefaultMaxBodyBytes
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()

		var before, during runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		var wg sync.WaitGroup
		wg.Go(func() { h.ServeHTTP(w, req) })
		<-stalled
		runtime.ReadMemStats(&during)
		close(body.release)
		wg.Wait()

		alloc := during.TotalAlloc - before.TotalAlloc
		t.Logf("%s declaring %d MiB, 1 byte sent: %d KiB allocated while it stalls", path, DefaultMaxBodyBytes>>20, alloc>>10)
		require.Less(t, alloc, uint64(1<<20), "%s", path)
		require.Equal(t, http.StatusBadRequest, w.Code, "%s: %s", path, w.Body)
	}
}

// TestReadBodyGrowsWithWhatArrives: readBody's buffer follows the bytes
// read, not the declared length; a truthful declaration ends in a buffer
// of its size, an undeclared body grows as it arrives, and the reader's
// error (maxBody's) comes back as it was.
func TestReadBodyGrowsWithWhatArrives(t *testing.T) {
	got, err := readBody(nil, strings.NewReader("{}"), 64<<20)
	require.NoError(t, err)
	require.Equal(t, "{}", string(got))
	require.LessOrEqual(t, cap(got), bodyStart+bytes.MinRead, "a lying length")

	for _, n := range []int{0, 300, bodyStart, 3*bodyStart + 17, 5 << 20} {
		want := bytes.Repeat([]byte{'x'}, n)
		got, err := readBody(nil, bytes.NewReader(want), int64(n))
		require.NoError(t, err)
		require.Equal(t, want, got, "%d bytes", n)
		require.Equal(t, n+bytes.MinRead+n/bodySlack, cap(got), "a truthful %d-byte length", n)
		again, err := readBody(got[:0], bytes.NewReader(append(want, bytes.Repeat([]byte{'y'}, n/bodySlack)...)), int64(n+n/bodySlack))
		require.NoError(t, err)
		require.Equal(t, n+n/bodySlack, len(again))
		require.Equal(t, unsafe.SliceData(got), unsafe.SliceData(again), "a body an eighth larger read again into the buffer of a %d-byte one", n)

		got, err = readBody(make([]byte, 0, 8), struct{ io.Reader }{bytes.NewReader(want)}, -1)
		require.NoError(t, err)
		require.Equal(t, want, got, "%d bytes undeclared", n)
		require.LessOrEqual(t, cap(got), max(2*n, bodyStart)+bytes.MinRead, "%d bytes undeclared", n)
	}

	rec := httptest.NewRecorder()
	_, err = readBody(nil, http.MaxBytesReader(rec, io.NopCloser(strings.NewReader(strings.Repeat("x", 2000))), 1024), -1)
	var mbe *http.MaxBytesError
	require.ErrorAs(t, err, &mbe)
}
