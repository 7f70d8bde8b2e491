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
	// a torn or garbage tail, not an allocation to attempt.
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

// replay reads every intact frame of f from the start and hands its ops to
// apply, then truncates a torn tail (a frame cut short by a crash, or one
// whose CRC does not match) so that new frames follow the last good one.
// A CRC-valid frame that does not decode is corruption, not a torn write:
// replay refuses it rather than silently dropping acknowledged data.
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
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			break // clean end (EOF) or a torn header
		}
		n := binary.LittleEndian.Uint32(hdr[:4])
		sum := binary.LittleEndian.Uint32(hdr[4:])
		if n > maxFrame || res.validEnd+frameHeader+int64(n) > size {
			break
		}
		if cap(body) < int(n) {
			body = make([]byte, n)
		}
		body = body[:n]
		if _, err := io.ReadFull(r, body); err != nil {
			break
		}
		if crc32.Checksum(body, crcTable) != sum {
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
