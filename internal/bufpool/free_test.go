package bufpool

import (
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// heldBytes is the capacity of every buffer the pools hold, counted from
// the pools themselves, and freeBytes at the same instant (every pool
// locked: the collector's ageing runs concurrently).
func heldBytes() (held, counted int64) {
	mu.Lock()
	defer mu.Unlock()
	for i := range pools {
		for _, l := range [][]free{pools[i].cur, pools[i].old} {
			for _, f := range l {
				held += int64(cap(f.b))
			}
		}
	}
	return held, freeBytes.Load()
}

// noCollections stops the collector (and so its ageing of the pools) until
// the test ends, after a last collection whose ageing is given time to
// run: a test that counts what the pools keep must not race it.
func noCollections(t *testing.T) {
	runtime.GC()
	time.Sleep(20 * time.Millisecond)
	prev := debug.SetGCPercent(-1)
	t.Cleanup(func() { debug.SetGCPercent(prev) })
}

// drain empties the pools (two collections' ageing) so that a test starts
// from none.
func drain() {
	age()
	age()
}

// checkFree: the count of free bytes is what the pools hold, and never
// above MaxFree.
func checkFree(t *testing.T, when string) {
	t.Helper()
	held, counted := heldBytes()
	if held != counted {
		t.Fatalf("%s: the pools hold %d bytes, counted %d", when, held, counted)
	}
	if held > MaxFree {
		t.Fatalf("%s: the pools hold %d bytes, above MaxFree (%d)", when, held, MaxFree)
	}
}

// TestFreeBytesBounded: after any sequence of Get, Pooled, Put and
// collections, the free buffers kept are at most MaxFree bytes, and the
// count of them is exact (issue 20: unbounded, the pools held 83% of the
// heap under one producer).
func TestFreeBytesBounded(t *testing.T) {
	sizes, _ := classTable()
	const limit = 4 << 20 // eight fill MaxFree
	for seed := range uint64(4) {
		drain()
		r := rand.New(rand.NewPCG(seed, 21))
		var held [][]byte
		for step := range 3000 {
			n := poolSize(r, sizes, limit)
			switch r.IntN(6) {
			case 0, 1:
				b := Get(n)
				checkGet(t, n, b)
				held = append(held, b)
			case 2:
				checkPooled(t, n, Pooled(n))
			case 3:
				Put(make([]byte, 0, max(n, 1)))
			case 4:
				for _, b := range held {
					Put(b)
				}
				held = held[:0]
			case 5:
				if r.IntN(4) == 0 {
					age() // a collection
				}
			}
			if step%50 == 0 {
				checkFree(t, "mid-sequence")
			}
		}
		checkFree(t, "end")
	}
}

// TestPutPastMaxFreeEvictsOldest: past MaxFree the buffers given back
// longest ago are left to the collector, not the newest: a request's frame,
// given back last, is what the next request asks for.
func TestPutPastMaxFreeEvictsOldest(t *testing.T) {
	const size = 4 << 20 // a class size
	bufs := make([][]byte, 2*MaxFree/size+3)
	for i := range bufs {
		bufs[i] = make([]byte, 1, size)
		bufs[i][0] = byte(i)
	}
	noCollections(t)
	drain()
	for _, b := range bufs {
		Put(b)
	}
	checkFree(t, "after putting twice MaxFree")
	if got := freeBytes.Load(); got != MaxFree/size*size {
		t.Fatalf("kept %d bytes of %d-byte buffers, want %d", got, size, MaxFree/size*size)
	}
	// The newest come back, newest first; the oldest were dropped.
	for i := len(bufs) - 1; i >= len(bufs)-MaxFree/size; i-- {
		b := Pooled(size)
		if cap(b) != size || b[:1][0] != byte(i) {
			t.Fatalf("Pooled(%d): cap %d, buffer %d; want buffer %d", size, cap(b), b[:1][0], i)
		}
	}
	if b := Pooled(size); b != nil {
		t.Fatalf("Pooled(%d) found buffer %d past the %d kept", size, b[:1][0], MaxFree/size)
	}

	// A smaller buffer given back to full pools evicts the oldest of
	// another class, and a previous cycle's before this one's.
	drain()
	Put(make([]byte, 0, 1<<20))
	age()
	for range MaxFree / size {
		Put(make([]byte, 0, size))
	}
	Put(make([]byte, 0, 2<<20))
	checkFree(t, "after a smaller Put to full pools")
	if Pooled(1<<20) != nil {
		t.Fatal("the previous cycle's 1 MiB buffer outlived a newer one")
	}
	if Pooled(2<<20) == nil {
		t.Fatal("the newest buffer was not kept")
	}
}

// TestFreeBuffersFoundFromAnyGoroutine: a buffer given back on one
// goroutine is the one the next Get finds on another, whatever processor
// each runs on. sync.Pools kept a buffer given back in the processor's
// own slot, where another processor's Get missed it and made a new one:
// one producer's frames, read on one goroutine and given back on another,
// took two or three buffers of each class.
func TestFreeBuffersFoundFromAnyGoroutine(t *testing.T) {
	const size = 1 << 20
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	noCollections(t)
	drain()
	// Two goroutines that spin, so each keeps a processor of its own: one
	// gives the buffer back, the other takes it, in turns.
	var turn atomic.Int32 // 0: the putter's, 1: the getter's, 2: done
	b := Get(size)
	first := unsafe.SliceData(b[:1])
	misses := 0
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 200 {
			for turn.Load() != 0 {
			}
			Put(b)
			turn.Store(1)
		}
	})
	wg.Go(func() {
		for range 200 {
			for turn.Load() != 1 {
			}
			b = Get(size)
			if unsafe.SliceData(b[:1]) != first {
				misses++
				first = unsafe.SliceData(b[:1])
			}
			turn.Store(0)
		}
	})
	wg.Wait()
	if misses > 0 {
		t.Fatalf("in 200 rounds Get made %d new buffers while the one given back was free", misses)
	}
}

// TestClassAboveServes: a free buffer of the class above serves a request
// (a frame of 5.9 MB finds the 6.1 MB frame's buffer), never one of a class
// below, nor two above.
func TestClassAboveServes(t *testing.T) {
	noCollections(t)
	drain()
	_, size, _ := class(6 << 20)
	Put(make([]byte, 0, size))
	if b := Pooled(size + 1); b != nil {
		t.Fatalf("a request above the class got a buffer of %d", cap(b))
	}
	sizes, _ := classTable()
	below := sizes[slices.Index(sizes, size)-1]
	if b := Pooled(below - 5); cap(b) != size {
		t.Fatalf("Pooled(%d) with a free buffer of the class above: cap %d", below-5, cap(b))
	}
	Put(make([]byte, 0, size))
	if b := Pooled(size/2 + 1); b != nil {
		t.Fatalf("a request two classes below got a buffer of %d", cap(b))
	}
	drain()
}

// TestIdleBuffersReleased: a buffer no one takes is dropped by the second
// collection after it was given back; one taken in between is not lost to
// the first. The collector's own cycles age the pools.
func TestIdleBuffersReleased(t *testing.T) {
	t.Run("ageing", func(t *testing.T) {
		a, b := make([]byte, 0, 1<<20), make([]byte, 0, 1<<20)
		noCollections(t)
		drain()
		Put(a)
		age()
		if Pooled(1<<20) == nil {
			t.Fatal("a buffer given back before one collection was dropped by it")
		}
		Put(b)
		age()
		age()
		if Pooled(1<<20) != nil || freeBytes.Load() != 0 {
			t.Fatalf("after two collections the pools still hold %d bytes", freeBytes.Load())
		}
	})
	t.Run("collections", func(t *testing.T) {
		// Real collections do it: the process keeps nothing once idle.
		Put(make([]byte, 0, 2<<20))
		deadline := time.Now().Add(10 * time.Second)
		for freeBytes.Load() != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("collections did not release %d idle bytes", freeBytes.Load())
			}
			runtime.GC()
			time.Sleep(time.Millisecond) // the cleanup runs on its own goroutine
		}
		checkFree(t, "after collections")
	})
}

// FuzzPoolFreeBound: any sequence of Get, Put and collections, each op two
// bytes (what, and which class near which size), keeps the free buffers
// within MaxFree and counted exactly, and every Get has room for its n.
func FuzzPoolFreeBound(f *testing.F) {
	sizes, _ := classTable()
	f.Add([]byte{0, 40, 0, 40, 1, 0, 1, 0, 2, 0, 0, 41})
	f.Add([]byte{3, 60, 3, 60, 3, 60, 3, 60, 3, 60, 3, 60, 2, 0, 2, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		var held [][]byte
		for i := 0; i+1 < len(ops); i += 2 {
			n := sizes[int(ops[i+1])%len(sizes)]
			for n > fuzzLimit {
				n >>= 3
			}
			n += int(ops[i+1]%5) - 2
			switch ops[i] % 4 {
			case 0:
				b := Get(n)
				checkGet(t, n, b)
				held = append(held, b)
			case 1:
				if len(held) > 0 {
					Put(held[len(held)-1])
					held = held[:len(held)-1]
				}
			case 2:
				age()
			case 3:
				Put(make([]byte, 0, max(n, 0)))
			}
		}
		checkFree(t, "after the sequence")
	})
}
