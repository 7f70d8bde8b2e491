package producer

import (
	"math"
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
	require.Equal(t, kerr.OutOfOrderSequenceNumber.Code, s.check(p, k(1), 0, 5, 9).code, "evicted: an unknown window")
	require.Equal(t, seqVerdict{}, s.check(p, k(0), 0, 5, 9), "kept")
	require.Equal(t, Stats{Producers: 1, Windows: 3, EvictedWindows: 1}, s.Stats())
	for id := int64(2); id <= 4; id++ {
		s.producer(Key{ID: id}, 0)
	}
	require.Equal(t, Stats{Producers: 3, Windows: 3, EvictedProducers: 1, EvictedWindows: 1}, s.Stats(), "the fourth producer evicted the first")
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
