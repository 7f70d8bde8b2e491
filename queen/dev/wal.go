package dev

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sync"
)

// The write-ahead log is a sequence of frames:
//
//	u32 little-endian body length | u32 CRC-32C of the body | body
//
// where a body is every op of one request (encodeFrame). One writer
// goroutine owns the file: requests append their frame to the open batch
// (in the order they applied it to memory, because they append while still
// holding Broker.mu) and wait for the batch's fsync. While one batch is
// being written and synced, the next one collects frames, so concurrent
// requests share an fsync (group commit).

const (
	frameHeader = 8
	// maxFrame bounds a frame read back on replay: a header claiming more is
	// damage (see replay), not an allocation to attempt.
	maxFrame = 1 << 30
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// batch is a group of frames made durable by one write and one fsync.
type batch struct {
	frames [][]op
	done   chan struct{}
	err    error
}

// wait blocks until the batch is on disk (or failed to get there).
func (b *batch) wait() error {
	if b == nil {
		return nil
	}
	<-b.done
	return b.err
}

type wal struct {
	f    *os.File
	kick chan struct{}
	exit chan struct{}

	mu      sync.Mutex
	open    *batch // collecting frames, not yet handed to the writer
	last    *batch // the batch holding the newest frame (open or in flight)
	closing bool
	failed  error // sticky: after a failed write nothing else is acknowledged

	buf []byte // writer-owned encode buffer
}

func startWAL(f *os.File) *wal {
	w := &wal{f: f, kick: make(chan struct{}, 1), exit: make(chan struct{})}
	go w.run()
	return w
}

// append queues one request's ops as a frame. The caller must hold the state
// lock across apply and append so that the log order is the apply order.
func (w *wal) append(ops []op) *batch {
	w.mu.Lock()
	if dead := w.deadLocked(); dead != nil {
		w.mu.Unlock()
		return dead
	}
	if w.open == nil {
		w.open = &batch{done: make(chan struct{})}
	}
	b := w.open
	b.frames = append(b.frames, ops)
	w.last = b
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
	return b
}

// tail returns the batch holding the newest frame, so that a reader can
// wait until everything it may have observed is durable.
// Once the log has failed (or closed), memory may hold changes that never
// reached it, so readers get the failure too.
func (w *wal) tail() *batch {
	w.mu.Lock()
	defer w.mu.Unlock()
	if dead := w.deadLocked(); dead != nil {
		return dead
	}
	return w.last
}

// deadLocked returns an already failed batch once the log has failed or is
// closing (nil while it takes frames). w.mu must be held.
func (w *wal) deadLocked() *batch {
	if w.failed == nil && !w.closing {
		return nil
	}
	err := w.failed
	if err == nil {
		err = errors.New("write-ahead log closed")
	}
	b := &batch{done: make(chan struct{}), err: err}
	close(b.done)
	return b
}

func (w *wal) run() {
	defer close(w.exit)
	for {
		<-w.kick
		for {
			w.mu.Lock()
			b := w.open
			w.open = nil
			closing := w.closing
			w.mu.Unlock()
			if b == nil {
				if closing {
					return
				}
				break
			}
			w.flush(b)
		}
	}
}

func (w *wal) flush(b *batch) {
	buf := w.buf[:0]
	for _, ops := range b.frames {
		buf = appendFrame(buf, ops)
	}
	err := w.writeSync(buf)
	if cap(buf) <= 64<<20 { // keep the buffer unless one huge batch inflated it
		w.buf = buf[:0]
	} else {
		w.buf = nil
	}
	if err != nil {
		err = fmt.Errorf("write-ahead log: %w", err)
		w.mu.Lock()
		w.failed = err
		w.mu.Unlock()
	}
	b.err = err
	b.frames = nil
	close(b.done)
}

// appendFrame appends one framed request: length, CRC-32C, body.
func appendFrame(buf []byte, ops []op) []byte {
	start := len(buf)
	buf = append(buf, make([]byte, frameHeader)...)
	buf = encodeFrame(buf, ops)
	body := buf[start+frameHeader:]
	binary.LittleEndian.PutUint32(buf[start:], uint32(len(body)))
	binary.LittleEndian.PutUint32(buf[start+4:], crc32.Checksum(body, crcTable))
	return buf
}

func (w *wal) writeSync(buf []byte) error {
	w.mu.Lock()
	failed := w.failed
	w.mu.Unlock()
	if failed != nil {
		return failed
	}
	if _, err := w.f.Write(buf); err != nil {
		return err
	}
	return w.f.Sync()
}

// close flushes everything queued, syncs and closes the file.
func (w *wal) close() error {
	w.mu.Lock()
	if w.closing {
		w.mu.Unlock()
		<-w.exit
		return nil
	}
	w.closing = true
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
	<-w.exit
	w.mu.Lock()
	failed := w.failed
	w.mu.Unlock()
	syncErr := w.f.Sync()
	closeErr := w.f.Close()
	return errors.Join(failed, syncErr, closeErr)
}

// replayResult says what replay found.
type replayResult struct {
	frames    int
	validEnd  int64 // bytes of intact frames
	tornBytes int64 // bytes dropped from the tail
}

// scanBudget bounds the bytes checksummed while looking for an intact frame
// after a damaged one (var so tests can lower it). A tail that cannot be
// checked within it is refused, never cut: refusing is the safe answer.
var scanBudget int64 = 4 << 30

// replay reads every intact frame of f from the start and hands its ops to
// apply. A frame is intact when its length is 1..maxFrame, it lies wholly
// inside the file and its CRC-32C matches. Reading stops at the first frame
// that is not intact, at byte X; the bytes from X to the end of the file are
// a torn tail, and are truncated so that new frames follow the last good
// one, only when
//
//   - fewer than a frame header's 8 bytes remain after X, or
//   - no intact frame whose body decodes starts at any byte after X.
//
// That is what a crash in the middle of the last write leaves: a frame cut
// short, or one whose CRC does not match, with nothing valid after it. An
// intact frame after the damage means the damaged frame was followed by
// acknowledged writes, so replay refuses (naming the offsets) instead of
// silently dropping them; so does a CRC-valid frame that does not decode.
func replay(f *os.File, apply func([]op) error) (replayResult, error) {
	var res replayResult
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return res, err
	}
	st, err := f.Stat()
	if err != nil {
		return res, err
	}
	size := st.Size()
	r := bufio.NewReaderSize(f, 1<<20)
	var hdr [frameHeader]byte
	var body []byte
	damage := "" // why the frame at validEnd is not intact
	for size-res.validEnd >= frameHeader {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return res, fmt.Errorf("frame at byte %d: %w", res.validEnd, err)
		}
		n := binary.LittleEndian.Uint32(hdr[:4])
		sum := binary.LittleEndian.Uint32(hdr[4:])
		if n == 0 || n > maxFrame {
			damage = fmt.Sprintf("length %d outside 1..%d", n, maxFrame)
			break
		}
		if res.validEnd+frameHeader+int64(n) > size {
			damage = fmt.Sprintf("length %d runs past the end of the file at byte %d", n, size)
			break
		}
		if cap(body) < int(n) {
			body = make([]byte, n)
		}
		body = body[:n]
		if _, err := io.ReadFull(r, body); err != nil {
			return res, fmt.Errorf("frame at byte %d: %w", res.validEnd, err)
		}
		if crc32.Checksum(body, crcTable) != sum {
			damage = "CRC mismatch"
			break
		}
		ops, err := decodeFrame(body)
		if err != nil {
			return res, fmt.Errorf("frame at byte %d: %w", res.validEnd, err)
		}
		if err := apply(ops); err != nil {
			return res, fmt.Errorf("frame at byte %d: %w", res.validEnd, err)
		}
		res.frames++
		res.validEnd += frameHeader + int64(n)
	}
	if damage != "" {
		at, err := firstIntact(f, res.validEnd+1, size)
		keep := fmt.Sprintf("move the log aside to start empty, or truncate it to %d bytes to keep only what precedes the damage", res.validEnd)
		if err != nil {
			return res, fmt.Errorf("frame at byte %d is damaged (%s) and what follows it could not be checked (%v): refusing to start; %s",
				res.validEnd, damage, err, keep)
		}
		if at >= 0 {
			return res, fmt.Errorf("frame at byte %d is damaged (%s) but an intact frame follows at byte %d: it is not a torn tail, and cutting it would drop acknowledged writes; refusing to start; %s",
				res.validEnd, damage, at, keep)
		}
	}
	res.tornBytes = size - res.validEnd
	if res.tornBytes > 0 {
		if err := f.Truncate(res.validEnd); err != nil {
			return res, fmt.Errorf("truncate torn tail: %w", err)
		}
		if err := f.Sync(); err != nil {
			return res, err
		}
	}
	if _, err := f.Seek(res.validEnd, io.SeekStart); err != nil {
		return res, err
	}
	return res, nil
}

// firstIntact returns the offset of the first intact frame whose body
// decodes starting in [from, size), or -1 when none does. It reads the range
// once, in order, and checksums only candidates whose length fits and whose
// body starts as a frame body does (an op count, then a known op kind);
// more than scanBudget checksummed bytes is an error.
func firstIntact(f *os.File, from, size int64) (int64, error) {
	if from >= size {
		return -1, nil
	}
	r := bufio.NewReaderSize(io.NewSectionReader(f, from, size-from), 1<<20)
	chunk := make([]byte, 1<<20)
	var work int64
	for y := from; ; y++ {
		p, err := r.Peek(frameHeader + binary.MaxVarintLen64 + 1)
		if len(p) < frameHeader+2 { // no room left for a frame
			if err != nil && err != io.EOF {
				return -1, err
			}
			return -1, nil
		}
		n := int64(binary.LittleEndian.Uint32(p[:4]))
		if n >= 2 && n <= maxFrame && y+frameHeader+n <= size && frameStart(p[frameHeader:]) {
			if work += n; work > scanBudget {
				return -1, fmt.Errorf("more than %d bytes to checksum", scanBudget)
			}
			crc := uint32(0)
			for off := int64(0); off < n; {
				m := int(min(int64(len(chunk)), n-off))
				if _, err := f.ReadAt(chunk[:m], y+frameHeader+off); err != nil {
					return -1, err
				}
				crc = crc32.Update(crc, crcTable, chunk[:m])
				off += int64(m)
			}
			if crc == binary.LittleEndian.Uint32(p[4:8]) {
				body := make([]byte, n)
				if _, err := f.ReadAt(body, y+frameHeader); err != nil {
					return -1, err
				}
				if _, err := decodeFrame(body); err == nil {
					return y, nil
				}
			}
		}
		if _, err := r.Discard(1); err != nil {
			return -1, err
		}
	}
}

// frameStart reports whether b can begin a frame body: an op count of at
// least one, then the first op's kind.
func frameStart(b []byte) bool {
	count, k := binary.Uvarint(b)
	return k > 0 && count >= 1 && k < len(b) && b[k] >= kindQueueSet && b[k] <= kindLogStart
}
