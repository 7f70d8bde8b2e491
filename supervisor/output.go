package supervisor

import (
	"bufio"
	"bytes"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// The seed's forwarding limits: a line is cut at 4 KiB, and 200 lines per
// ten second window reach the log, the rest are counted.
const (
	maxLineBytes = 4 << 10
	lineBudget   = 200
	budgetWindow = 10 * time.Second
)

// readLines calls emit with each line of r, without its newline, cut at
// maxLineBytes (truncated says so; the rest of such a line is dropped).
// line is only valid during the call. It returns at EOF or a read error.
func readLines(r io.Reader, emit func(line []byte, truncated bool)) {
	// One byte more than a line, so a line of exactly maxLineBytes still
	// fits with its newline.
	br := bufio.NewReaderSize(r, maxLineBytes+1)
	skipping := false
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			if !skipping {
				emit(line[:maxLineBytes], true)
				skipping = true
			}
			continue
		}
		if len(line) > 0 && !skipping {
			emit(bytes.TrimSuffix(line, []byte{'\n'}), false)
		}
		skipping = false
		if err != nil {
			return
		}
	}
}

// clean makes a line of child output safe for the broker's log: escape
// sequences (CSI, OSC, DCS and the other string sequences, and two-byte
// escapes) are removed whole, then every remaining C0 and C1 control
// character and DEL; a tab becomes a space and bytes that are not UTF-8
// become U+FFFD. A line cut at maxLineBytes may end inside a character,
// which is dropped rather than shown as U+FFFD.
func clean(line []byte, truncated bool) string {
	if truncated {
		line = trimPartialRune(line)
	}
	var b strings.Builder
	b.Grow(len(line))
	for i := 0; i < len(line); {
		c := line[i]
		if c == 0x1b {
			i = skipEscape(line, i)
			continue
		}
		r, n := utf8.DecodeRune(line[i:])
		i += n
		switch {
		case r == '\t':
			b.WriteByte(' ')
		case r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f:
			// control: dropped
		default:
			b.WriteRune(r) // RuneError for invalid bytes is U+FFFD
		}
	}
	return b.String()
}

// skipEscape returns the index just past the escape sequence at line[i]
// (an ESC); an unterminated sequence runs to the end of the line.
func skipEscape(line []byte, i int) int {
	i++ // ESC
	if i >= len(line) {
		return i
	}
	switch line[i] {
	case '[': // CSI: parameter and intermediate bytes, then one final byte
		for i++; i < len(line); i++ {
			if line[i] >= 0x40 && line[i] <= 0x7e {
				return i + 1
			}
		}
		return i
	case ']', 'P', 'X', '^', '_': // OSC, DCS, SOS, PM, APC: up to BEL or ST (ESC \)
		for i++; i < len(line); i++ {
			if line[i] == 0x07 {
				return i + 1
			}
			if line[i] == 0x1b && i+1 < len(line) && line[i+1] == '\\' {
				return i + 2
			}
		}
		return i
	default: // ESC, intermediate bytes, one final byte (charset selection, keypad modes, …)
		for i < len(line) && line[i] >= 0x20 && line[i] <= 0x2f {
			i++
		}
		return min(i+1, len(line))
	}
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of b.
func trimPartialRune(b []byte) []byte {
	for n := 1; n <= utf8.UTFMax && n <= len(b); n++ {
		if utf8.RuneStart(b[len(b)-n]) {
			if !utf8.FullRune(b[len(b)-n:]) {
				return b[:len(b)-n]
			}
			return b
		}
	}
	return b
}

// budget is the log budget shared by both streams of every child the
// supervisor starts: lineBudget lines per window reach the log, and the
// lines past it are counted and reported as one "suppressed" line when the
// window ends (or at flush, when the supervisor stops).
type budget struct {
	log   *slog.Logger
	clock Clock

	mu         sync.Mutex
	start      time.Time // of the current window
	used       int       // lines logged in it
	suppressed int       // lines dropped in it
}

func (b *budget) line(stream string, pid int, text string, truncated bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	if now.Sub(b.start) >= budgetWindow {
		b.flushLocked()
		b.start, b.used = now, 0
	}
	if b.used < lineBudget {
		b.used++
		attrs := []any{"stream", stream, "pid", pid, "line", text}
		if truncated {
			attrs = append(attrs, "truncated", true)
		}
		b.log.Info("queen-kafka", attrs...)
		return
	}
	b.suppressed++
	if b.suppressed == 1 {
		// The count is reported when the window ends even if the child
		// then falls silent.
		start := b.start
		wait := b.clock.After(start.Add(budgetWindow).Sub(now))
		go func() {
			<-wait
			b.mu.Lock()
			defer b.mu.Unlock()
			if b.start.Equal(start) {
				b.flushLocked()
			}
		}()
	}
}

// flush reports a pending suppressed count now.
func (b *budget) flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flushLocked()
}

func (b *budget) flushLocked() {
	if b.suppressed == 0 {
		return
	}
	b.log.Warn("queen-kafka output over budget", "suppressed", b.suppressed, "budget", lineBudget, "window", budgetWindow.String())
	b.suppressed = 0
}
