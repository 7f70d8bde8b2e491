package bufpool

import (
	"math/bits"
	"sync"
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

// pools holds one pool per class: the smallest class, then perShift per
// power of two above it.
var pools [1 + (maxShift-minShift)*perShift]sync.Pool // *[]byte

// class is the index and size of the smallest class holding n bytes;
// ok is false for n above the largest class. Each class has its own
// index: a pool holds buffers of one size, which serve every request of
// its class.
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

// Get returns an empty buffer of capacity at least n, pooled when one is
// free, else fresh; below the smallest class and past the largest one it
// is made to measure, never pooled.
func Get(n int) []byte {
	idx, size, ok := class(n)
	if !ok || n < 1<<minShift {
		return make([]byte, 0, n)
	}
	if p, _ := pools[idx].Get().(*[]byte); p != nil {
		return (*p)[:0]
	}
	return make([]byte, 0, size)
}

// Pooled returns a free pooled buffer of capacity at least n, or nil when
// the pool has none: it never allocates.
func Pooled(n int) []byte {
	idx, _, ok := class(n)
	if !ok || n < 1<<minShift {
		return nil
	}
	if p, _ := pools[idx].Get().(*[]byte); p != nil {
		return (*p)[:0]
	}
	return nil
}

// Put gives b back for reuse; the caller must not touch it afterwards. A
// buffer whose capacity is not a class size (one Get did not make, or a
// small one) is left to the collector.
func Put(b []byte) {
	idx, size, ok := class(cap(b))
	if !ok || size != cap(b) || cap(b) < 1<<minShift {
		return
	}
	b = b[:0]
	pools[idx].Put(&b)
}
