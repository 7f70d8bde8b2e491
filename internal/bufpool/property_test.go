package bufpool

import (
	"math/rand/v2"
	"testing"
)

// classTable walks the classes from the smallest request up: sizes[i] is
// the size of the i-th class met and idxs[i] the index class gave it.
func classTable() (sizes, idxs []int) {
	for n := 1; ; {
		idx, size, ok := class(n)
		if !ok {
			return sizes, idxs
		}
		sizes, idxs = append(sizes, size), append(idxs, idx)
		n = size + 1
	}
}

// TestClassesDistinct: every class is a pool of its own, in size order,
// and every pool is some class's. A pool shared by two classes hands the
// smaller class's buffers to the larger one's requests (issue 20: a 64 KiB
// buffer given to a 71,470-byte frame).
func TestClassesDistinct(t *testing.T) {
	sizes, idxs := classTable()
	if len(sizes) != len(pools) {
		t.Fatalf("%d classes for %d pools", len(sizes), len(pools))
	}
	for i := range sizes {
		if idxs[i] != i {
			t.Fatalf("class of %d bytes has pool %d, want %d (the classes below it hold pools 0..%d)", sizes[i], idxs[i], i, i-1)
		}
		if i > 0 && sizes[i] <= sizes[i-1] {
			t.Fatalf("class %d is %d bytes, not above class %d's %d", i, sizes[i], i-1, sizes[i-1])
		}
	}
	if sizes[0] != 1<<minShift || sizes[len(sizes)-1] != 1<<maxShift {
		t.Fatalf("classes span %d..%d, want %d..%d", sizes[0], sizes[len(sizes)-1], 1<<minShift, 1<<maxShift)
	}
}

// checkClass: n's class is the smallest class holding n bytes.
func checkClass(t *testing.T, sizes []int, n int) {
	t.Helper()
	idx, size, ok := class(n)
	if n > 1<<maxShift {
		if ok {
			t.Fatalf("%d bytes, past the largest class, has class %d (%d bytes)", n, idx, size)
		}
		return
	}
	want := 0
	for want < len(sizes) && sizes[want] < n {
		want++
	}
	if !ok || idx != want || size != sizes[want] {
		t.Fatalf("class(%d) = %d, %d bytes, %v; want class %d of %d bytes", n, idx, size, ok, want, sizes[want])
	}
}

// classSizes is the size of n's class and of the class above it (the
// same when n's is the largest), ok false when n is in no class or below
// the smallest: what a buffer for n may hold.
func classSizes(n int) (size, above int, ok bool) {
	_, size, ok = class(n)
	if !ok || n < 1<<minShift {
		return 0, 0, false
	}
	_, above, okAbove := class(size + 1)
	if !okAbove {
		above = size
	}
	return size, above, true
}

// checkGet: Get(n) is empty with room for n bytes: its class's size or the
// class above's when n is in a class (a free buffer of the class above
// serves it), else exactly n.
func checkGet(t *testing.T, n int, b []byte) {
	t.Helper()
	lo, hi := n, n
	if size, above, ok := classSizes(n); ok {
		lo, hi = size, above
	}
	if len(b) != 0 || cap(b) < lo || cap(b) > hi || cap(b) < n {
		t.Fatalf("Get(%d): len %d cap %d, want len 0 cap %d..%d", n, len(b), cap(b), lo, hi)
	}
}

// checkPooled: Pooled(n) is nil or, like Get, empty with its class's size
// or the class above's.
func checkPooled(t *testing.T, n int, b []byte) {
	t.Helper()
	if b == nil {
		return
	}
	if size, above, ok := classSizes(n); !ok || len(b) != 0 || cap(b) < size || cap(b) > above {
		t.Fatalf("Pooled(%d): len %d cap %d, want nil or len 0 cap %d..%d", n, len(b), cap(b), size, above)
	}
}

// poolSize picks a request size: mostly a class boundary give or take a
// few bytes (where two classes meet), else anything up to limit.
func poolSize(r *rand.Rand, sizes []int, limit int) int {
	if r.IntN(4) == 0 {
		return r.IntN(limit + 1)
	}
	s := sizes[r.IntN(len(sizes))]
	for s > limit {
		s = sizes[r.IntN(len(sizes))]
	}
	return max(0, s+r.IntN(9)-4)
}

// TestPoolNeverHandsOutTooLittle: after any sequence of Get, Pooled and
// Put, of buffers Get made and of buffers made elsewhere, every Get(n)
// and every non-nil Pooled(n) has room for n bytes.
func TestPoolNeverHandsOutTooLittle(t *testing.T) {
	sizes, _ := classTable()
	const limit = 1 << 20
	for seed := range uint64(4) {
		r := rand.New(rand.NewPCG(seed, 20))
		var held [][]byte
		for range 2000 {
			n := poolSize(r, sizes, limit)
			checkClass(t, sizes, n)
			switch r.IntN(5) {
			case 0, 1:
				b := Get(n)
				checkGet(t, n, b)
				held = append(held, append(b, 1))
			case 2:
				checkPooled(t, n, Pooled(n))
			case 3:
				// A buffer of any capacity: Put keeps only class sizes.
				Put(make([]byte, r.IntN(8), max(n, 8)))
			case 4:
				for i := r.IntN(len(held) + 1); i > 0; i-- {
					j := r.IntN(len(held))
					Put(held[j])
					held[j] = held[len(held)-1]
					held = held[:len(held)-1]
				}
			}
			if len(held) > 32 {
				for _, b := range held {
					Put(b)
				}
				held = held[:0]
			}
		}
	}
}

// fuzzLimit bounds what the fuzz target allocates; the class arithmetic
// is checked over every size.
const fuzzLimit = 8 << 20

// FuzzPoolPutGet: buffers of one size given back never serve a request of
// another size they cannot hold. The corpus holds the sizes where the
// 64 KiB class meets the next (65536, 65537, 71470, 81920, 81921).
func FuzzPoolPutGet(f *testing.F) {
	sizes, _ := classTable()
	f.Fuzz(func(t *testing.T, put, get uint32) {
		checkClass(t, sizes, int(put))
		checkClass(t, sizes, int(get))
		p, g := int(put%(fuzzLimit+1)), int(get%(fuzzLimit+1))
		var bs [4][]byte
		for i := range bs {
			bs[i] = Get(p)
			checkGet(t, p, bs[i])
		}
		for _, b := range bs {
			Put(b)
		}
		checkPooled(t, g, Pooled(g))
		checkGet(t, g, Get(g))
	})
}
