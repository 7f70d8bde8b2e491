package bufpool

import (
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
)

const (
	// minShift is the smallest class, 64 KiB: smaller buffers cost too
	// little to pool.
	minShift = 16
	// maxShift bounds the classes, 256 MiB: no request is larger (the
	// frame ceiling is 100 MiB).
	maxShift = 28
	perShift = 4
)

// MaxFree bounds the bytes of the free buffers kept, all classes together;
// past it the buffers given back longest ago are left to the collector.
// Free buffers are live heap to the collector, which lets the heap grow to
// a multiple of the live heap (GOGC) before the next collection, so what
// is kept counts about twice in the process's peak. It holds what one
// producer's requests of several megabytes need between them (the frame,
// its envelope arrays, the push body and its answer, about 20 MiB), so a
// steady producer finds every buffer again; kept without a bound, a burst
// (decompression bombs, many producers at once) stayed until collections.
const MaxFree = 32 << 20

// free is a buffer given back, with the order it was given back in.
type free struct {
	b   []byte
	seq uint64
}

// pool is one class's free buffers: cur were given back since the last
// collection, old before it, each oldest first. Each collection drops old
// and makes cur old, so a buffer nobody took for a whole cycle of the
// collector goes back to it, and an idle process (which the runtime still
// collects every two minutes) keeps none for long.
type pool struct {
	cur, old []free
}

// mu guards every pool and seq: one lock, so that making room past
// MaxFree can choose among all classes, and so that a buffer given back
// on one processor is found from any other (a sync.Pool keeps one per
// processor where only that processor finds it, and one producer's
// frames, read on one and given back on another, took two or three
// buffers of each class). Only buffers of 64 KiB and more pass here, a
// few per request.
var mu sync.Mutex

// pools holds one pool per class: the smallest class, then perShift per
// power of two above it.
var pools [1 + (maxShift-minShift)*perShift]pool

// seq orders the buffers given back.
var seq uint64

// freeBytes is the capacity of every buffer the pools hold (under mu;
// atomic so that tests may read it without).
var freeBytes atomic.Int64

func init() { ageEachCollection() }

// gcTick is an object nothing references: its cleanup runs after each
// collection that found it unreachable, ages the pools and makes the next
// one. (It holds a pointer so that it is not a tiny allocation, whose
// cleanups may never run.)
type gcTick struct {
	_ *gcTick
	_ [8]byte
}

func ageEachCollection() {
	runtime.AddCleanup(&gcTick{}, func(struct{}) {
		age()
		ageEachCollection()
	}, struct{}{})
}

// age drops the buffers no one took since the last collection.
func age() {
	mu.Lock()
	defer mu.Unlock()
	for i := range pools {
		p := &pools[i]
		var dropped int64
		for j, f := range p.old {
			dropped += int64(cap(f.b))
			p.old[j] = free{}
		}
		p.old, p.cur = p.cur, p.old[:0]
		freeBytes.Add(-dropped)
	}
}

// take is a free buffer of class idx, or else of the class above it (a
// quarter larger at most: requests of one size straddle two classes), the
// most recently given back first; nil when there is none.
func take(idx int) []byte {
	mu.Lock()
	defer mu.Unlock()
	for i := idx; i <= idx+1 && i < len(pools); i++ {
		p := &pools[i]
		for _, l := range []*[]free{&p.cur, &p.old} {
			if n := len(*l); n > 0 {
				b := (*l)[n-1].b
				(*l)[n-1] = free{}
				*l = (*l)[:n-1]
				freeBytes.Add(-int64(cap(b)))
				return b
			}
		}
	}
	return nil
}

// evictOldest drops the free buffer given back longest ago, of any class
// (the previous cycle's before this one's). Under mu; false when there is
// none.
func evictOldest() bool {
	var l *[]free
	for _, gen := range []func(*pool) *[]free{
		func(p *pool) *[]free { return &p.old },
		func(p *pool) *[]free { return &p.cur },
	} {
		for i := range pools {
			c := gen(&pools[i])
			if len(*c) > 0 && (l == nil || (*c)[0].seq < (*l)[0].seq) {
				l = c
			}
		}
		if l != nil {
			break
		}
	}
	if l == nil {
		return false
	}
	freeBytes.Add(-int64(cap((*l)[0].b)))
	n := copy(*l, (*l)[1:])
	(*l)[n] = free{}
	*l = (*l)[:n]
	return true
}

// class is the index and size of the smallest class holding n bytes;
// ok is false for n above the largest class. Each class has its own
// index: a pool holds buffers of one size.
func class(n int) (idx, size int, ok bool) {
	if n <= 1<<minShift {
		return 0, 1 << minShift, true
	}
	k := bits.Len(uint(n-1)) - 1 // 2^k < n <= 2^(k+1)
	if k+1 > maxShift {
		return 0, 0, false
	}
	step := 1 << k / perShift
	j := (n - 1<<k + step - 1) / step // 1..perShift
	// Class 0 is 2^minShift alone; each power of two above has perShift.
	return (k-minShift)*perShift + j, 1<<k + j*step, true
}

// Get returns an empty buffer of capacity at least n: a free one of n's
// class or the class above when there is one, else a fresh one of n's
// class; below the smallest class and past the largest one it is made to
// measure, never pooled. A free buffer is not cleared: the caller
// overwrites what it reads.
func Get(n int) []byte {
	idx, size, ok := class(n)
	if !ok || n < 1<<minShift {
		return make([]byte, 0, n)
	}
	if b := take(idx); b != nil {
		return b
	}
	return make([]byte, 0, size)
}

// Pooled returns a free buffer as Get would, or nil when the pools have
// none: it never allocates.
func Pooled(n int) []byte {
	idx, _, ok := class(n)
	if !ok || n < 1<<minShift {
		return nil
	}
	return take(idx)
}

// Put gives b back for reuse; the caller must not touch it afterwards. A
// buffer whose capacity is not a class size (one Get did not make, or a
// small one) is left to the collector. Past MaxFree the buffers given back
// longest ago are left to it instead: the newest is the likeliest to be
// asked for again (a request's frame, given back last, is the next one's).
func Put(b []byte) {
	idx, size, ok := class(cap(b))
	if !ok || size != cap(b) || cap(b) < 1<<minShift || size > MaxFree {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	for freeBytes.Load()+int64(size) > MaxFree && evictOldest() {
	}
	seq++
	p := &pools[idx]
	p.cur = append(p.cur, free{b[:0], seq})
	freeBytes.Add(int64(size))
}
