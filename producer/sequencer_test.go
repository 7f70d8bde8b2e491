package producer

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestSequencerEvictsLeastRecentlyUsed(t *testing.T) {
	s := NewSequencer(3)
	k := func(p int32) windowKey { return windowKey{producer: Key{ID: 1}, topic: "t", partition: p} }
	p := s.producer(Key{ID: 1}, 0)
	for i := int32(0); i < 3; i++ {
		require.Equal(t, seqVerdict{}, s.check(p, k(i), 0, 0, 4))
		s.accepted(k(i), 0, 0, 4, 100)
	}
	require.True(t, s.check(p, k(0), 0, 0, 4).dup) // touch 0: 1 is now the oldest
	s.accepted(k(3), 0, 0, 4, 100)
	require.Equal(t, 3, s.windowCount())
	require.Equal(t, seqVerdict{}, s.check(p, k(1), 0, 5, 9), "evicted: an unknown window accepts any sequence (issue 9, as Kafka 3.9)")
	require.Equal(t, kerr.OutOfOrderSequenceNumber.Code, s.check(p, k(0), 0, 6, 9).code, "a gap on a known window")
	require.Equal(t, seqVerdict{}, s.check(p, k(0), 0, 5, 9), "kept")
	require.Equal(t, Stats{Producers: 1, Windows: 3, EvictedWindows: 1}, s.Stats())
	s.unpin(p) // given back: evictable
	for id := int64(2); id <= 4; id++ {
		s.unpin(s.producer(Key{ID: id}, 0))
	}
	require.Equal(t, Stats{Producers: 3, Windows: 3, EvictedProducers: 1, EvictedWindows: 1}, s.Stats(), "the fourth producer evicted the first")
}

// TestSequencerUnknownAndPinnedWindows: a window the node never held
// accepts any sequence and starts there (issue 9: Queen's dedup window
// answers a retry of a batch already stored), a gap on it from then on is
// refused, a new epoch starts at 0, and a first batch whose write failed
// pins the window so the batches behind it are a gap until it is retried.
func TestSequencerUnknownAndPinnedWindows(t *testing.T) {
	s := NewSequencer(10)
	k := windowKey{producer: Key{ID: 1}, topic: "t"}
	p := s.producer(Key{ID: 1}, 0)
	require.Equal(t, seqVerdict{}, s.check(p, k, 0, 42, 44), "unknown: accepted mid-stream")
	s.accepted(k, 0, 42, 44, 10)
	require.Equal(t, seqVerdict{dup: true, base: 10}, s.check(p, k, 0, 42, 44))
	require.Equal(t, kerr.OutOfOrderSequenceNumber.Code, s.check(p, k, 0, 46, 47).code, "gap on the known window")
	require.Equal(t, seqVerdict{}, s.check(p, k, 0, 45, 47))
	require.Equal(t, kerr.OutOfOrderSequenceNumber.Code, s.check(p, k, 1, 3, 4).code, "a new epoch starts at 0")
	require.Equal(t, seqVerdict{}, s.check(p, k, 1, 0, 4))

	k2 := windowKey{producer: Key{ID: 1}, topic: "u"}
	s.pin(k2, 1, 7)
	require.Equal(t, kerr.RequestTimedOut.Code, s.check(p, k2, 1, 9, 9).code, "behind the failed first batch: retriable")
	require.Equal(t, seqVerdict{}, s.check(p, k2, 1, 7, 8), "the failed batch's retry")
	s.pin(k, 1, 99) // a known window is not moved by a pin
	require.Equal(t, seqVerdict{}, s.check(p, k, 1, 0, 4))
	// but a gap behind its failed write is refused retriably until a write
	// at its next sequence lands (TestChaos: librdkafka bumps its epoch on
	// OUT_OF_ORDER and resends the failed records under new dedup keys).
	s.accepted(k, 1, 0, 4, 100)
	s.pin(k, 1, 5) // the write of 5..6 failed
	require.Equal(t, kerr.RequestTimedOut.Code, s.check(p, k, 1, 7, 8).code, "gap behind a failed write")
	require.Equal(t, seqVerdict{}, s.check(p, k, 1, 5, 6), "the failed batch's retry")
	s.accepted(k, 1, 5, 6, 105)
	require.Equal(t, kerr.OutOfOrderSequenceNumber.Code, s.check(p, k, 1, 9, 9).code, "a gap once the window moved on")
}

func TestSequenceWrap(t *testing.T) {
	require.Equal(t, int32(0), seqAdd(math.MaxInt32, 1))
	require.Equal(t, int32(4), seqAdd(math.MaxInt32-5, 10))
	s := NewSequencer(10)
	k := windowKey{producer: Key{ID: 1}, topic: "t"}
	p := s.producer(Key{ID: 1}, 0)
	s.accepted(k, 0, math.MaxInt32-1, math.MaxInt32, 7)
	require.Equal(t, seqVerdict{}, s.check(p, k, 0, 0, 3), "after MaxInt32 comes 0")
}

// check decides a batch of producer p (whose mu the caller holds) against
// its live window, as a lone produce request would.
func (s *Sequencer) check(p *producerState, k windowKey, epoch int16, first, last int32) seqVerdict {
	v, _ := decideSeq(&p.epoch, s.window(k, false), epoch, first, last)
	return v
}

// windowCount is how many windows are held.
func (s *Sequencer) windowCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.windows)
}

// TestSequencerKeepsALockedProducer: a producer whose lock is held is not
// evicted by the producers created meanwhile, so the next request for it
// finds that state, locked, rather than making a second one to lock beside
// it; it is evictable again once given back.
func TestSequencerKeepsALockedProducer(t *testing.T) {
	s := NewSequencer(1)
	k := Key{ID: 1}
	held, unlock := s.lockProducers([]Key{k}, nil)
	for id := int64(2); id <= 4; id++ {
		s.Grant(Key{ID: id}, 0) // each would evict the least recently used
	}
	again := s.producer(k, 0)
	require.Same(t, held[k], again, "the locked producer was evicted and made again")
	require.False(t, again.mu.TryLock(), "a second holder of one producer")
	s.unpin(again)
	unlock()
	s.Grant(Key{ID: 5}, 0)
	_, known := s.Epoch(k)
	require.False(t, known, "evictable once unlocked")
	require.LessOrEqual(t, s.Stats().Producers, 2)
}

// TestSequencerEvictionNeverGivesTwoHolders: many requests locking a few
// producers through a sequencer far too small for them never hold one
// producer twice at once (run with -race: the unguarded counter is the
// producer's to guard).
func TestSequencerEvictionNeverGivesTwoHolders(t *testing.T) {
	s := NewSequencer(2)
	const producers, workers, rounds = 6, 8, 500
	var inside [producers]atomic.Int32
	var writes [producers]int // guarded by the producer's lock alone
	var wg sync.WaitGroup
	var twice atomic.Int32
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				id := (w + r) % producers
				_, unlock := s.lockProducers([]Key{{ID: int64(id)}}, nil)
				if inside[id].Add(1) != 1 {
					twice.Add(1)
				}
				runtime.Gosched() // let the others evict and lock meanwhile
				writes[id]++
				inside[id].Add(-1)
				unlock()
			}
		}()
	}
	wg.Wait()
	require.Zero(t, twice.Load(), "a producer was held by two requests at once")
	total := 0
	for _, n := range writes {
		total += n
	}
	require.Equal(t, workers*rounds, total)
}

// TestSequencerForgetWindows: after the live set changed, a window another
// node may have moved past is forgotten, so the producer's next batch is
// accepted at its sequence instead of refused as a gap; the producers and
// their epochs stay (fencing is unchanged), and windows build again.
func TestSequencerForgetWindows(t *testing.T) {
	s := NewSequencer(8)
	k := func(p int32) windowKey { return windowKey{producer: Key{ID: 1}, topic: "t", partition: p} }
	p := s.producer(Key{ID: 1}, 0)
	for i := int32(0); i < 2; i++ {
		require.Equal(t, seqVerdict{}, s.check(p, k(i), 0, 0, 4))
		s.accepted(k(i), 0, 0, 4, 100)
	}
	require.Equal(t, kerr.OutOfOrderSequenceNumber.Code, s.check(p, k(0), 0, 40, 44).code, "a gap on a held window")
	require.Equal(t, 2, s.ForgetWindows())
	require.Equal(t, 0, s.windowCount())
	require.Equal(t, seqVerdict{}, s.check(p, k(0), 0, 40, 44), "another node took sequences 5-39 meanwhile: accepted")
	s.accepted(k(0), 0, 40, 44, 200)
	require.Equal(t, kerr.OutOfOrderSequenceNumber.Code, s.check(p, k(0), 0, 50, 54).code, "the new window checks gaps again")
	require.True(t, s.check(p, k(0), 0, 40, 44).dup, "and answers its retry")
	require.Equal(t, 1, s.Stats().Producers)
	e, known := s.Epoch(Key{ID: 1})
	require.True(t, known)
	require.Equal(t, int16(0), e)
	s.unpin(p)
}
