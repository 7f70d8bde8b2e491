package testsupport

import (
	"bytes"
	"sync"
)

// LogBuffer collects a child's stdout and stderr, or a logger's output; safe
// for the two copier goroutines exec starts and for readers.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// Len is how many bytes have been written so far: an offset for From.
func (b *LogBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}

// From returns everything written since byte offset off (all of it when
// off is past the end).
func (b *LogBuffer) From(off int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if off > b.buf.Len() {
		off = 0
	}
	return string(b.buf.Bytes()[off:])
}

// String is everything written.
func (b *LogBuffer) String() string { return b.From(0) }

// Tail is s cut to its last n bytes, marked when cut.
func Tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
