package producer

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/queen-mq/queen-kafka/recordbatch"
)

// idem is an idempotent batch of producer 7 on t/0 covering first..first+n-1.
func idem(epoch int16, first, n int32) *Batch {
	return &Batch{Topic: "t", ProducerID: 7, Epoch: epoch, FirstSeq: first, Records: n}
}

// write records the outcome of every batch Sequence marked Write, as a push
// storing them one after another from base (or failing all with code).
func write(t *testing.T, reqs [][]*Batch, base int64, code int16) {
	t.Helper()
	for _, r := range reqs {
		for _, b := range r {
			switch {
			case !b.Write:
			case code != 0:
				b.Outcome = Outcome{Base: -1, Code: code, Msg: "queen: down"}
			default:
				b.Outcome = Outcome{Base: base}
				base += int64(b.Records)
			}
		}
	}
}

// TestGroupSequencesAcrossRequests: a batch of request 2 follows request
// 1's batch of the same producer-partition, a repeat inside the group is
// answered with its original's offset without a second write, a gap
// refuses only its batch, and a batch without a producer id is written
// unless it did not decode.
func TestGroupSequencesAcrossRequests(t *testing.T) {
	s := NewSequencer(10)
	s.Grant(Key{ID: 7}, 0)
	plain := &Batch{Topic: "t", Partition: 1, ProducerID: -1, Records: 2}
	broken := &Batch{Topic: "t", Partition: 1, ProducerID: -1, Records: 1, Fault: &recordbatch.Fault{Code: kerr.CorruptMessage.Code, Msg: "bad"}}
	reqs := [][]*Batch{{idem(0, 0, 3), plain}, {idem(0, 3, 2), broken}, {idem(0, 0, 3), idem(0, 9, 1)}}
	unlock := s.Sequence("", reqs)
	require.Equal(t, []bool{true, true, true, false, false, false},
		[]bool{reqs[0][0].Write, reqs[0][1].Write, reqs[1][0].Write, reqs[1][1].Write, reqs[2][0].Write, reqs[2][1].Write})
	write(t, reqs, 10, 0)
	s.Settle(reqs)
	unlock()
	require.Equal(t, Answer{Base: 10, Stored: true}, reqs[0][0].Answer)
	require.Equal(t, Answer{Base: 13, Stored: true}, reqs[0][1].Answer)
	require.Equal(t, Answer{Base: 15, Stored: true}, reqs[1][0].Answer)
	require.Equal(t, Answer{Code: kerr.CorruptMessage.Code, Msg: "bad", Base: -1}, reqs[1][1].Answer)
	require.Equal(t, Answer{Base: 10}, reqs[2][0].Answer, "the repeat is answered from its original, written once")
	require.Equal(t, Answer{Code: kerr.OutOfOrderSequenceNumber.Code, Base: -1}, reqs[2][1].Answer, "a gap")

	// The windows remember what was written: a later group's retry is
	// answered from them, and the next sequence follows.
	next := [][]*Batch{{idem(0, 3, 2)}, {idem(0, 5, 1)}}
	unlock = s.Sequence("", next)
	write(t, next, 20, 0)
	s.Settle(next)
	unlock()
	require.Equal(t, Answer{Base: 15}, next[0][0].Answer)
	require.Equal(t, Answer{Base: 20, Stored: true}, next[1][0].Answer)
}

// TestGroupBehindFailedWrite: when a write fails, the batches of the same
// window behind it are answered as they would have been alone, against the
// window the failure left: the next sequence is refused retriably (the
// failed batch may have landed; its retry is still to come), a repeat of
// the failed batch is retried like it, and nothing is remembered.
func TestGroupBehindFailedWrite(t *testing.T) {
	s := NewSequencer(10)
	s.Grant(Key{ID: 7}, 0)
	reqs := [][]*Batch{{idem(0, 0, 2)}, {idem(0, 2, 2)}, {idem(0, 0, 2)}}
	unlock := s.Sequence("", reqs)
	write(t, reqs, 0, kerr.RequestTimedOut.Code)
	s.Settle(reqs)
	unlock()
	require.Equal(t, Answer{Code: kerr.RequestTimedOut.Code, Msg: "queen: down", Base: -1}, reqs[0][0].Answer)
	require.Equal(t, Answer{Code: kerr.RequestTimedOut.Code, Base: -1}, reqs[1][0].Answer, "behind the failed write: retriable, not OUT_OF_ORDER")
	require.Equal(t, Answer{Code: kerr.RequestTimedOut.Code, Msg: "queen: down", Base: -1}, reqs[2][0].Answer)

	// The client's retry of the first batch is then written.
	retry := [][]*Batch{{idem(0, 0, 2)}}
	unlock = s.Sequence("", retry)
	require.True(t, retry[0][0].Write)
	write(t, retry, 0, 0)
	s.Settle(retry)
	unlock()
	require.Equal(t, Answer{Base: 0, Stored: true}, retry[0][0].Answer)
}

// TestGroupEpochs: a granted epoch fences the older one, a batch of a newer
// epoch (Java's local bump) starts its window over at sequence 0, and the
// first request naming an unknown producer creates it at its epoch.
func TestGroupEpochs(t *testing.T) {
	s := NewSequencer(10)
	s.Grant(Key{ID: 7}, 2)
	reqs := [][]*Batch{{idem(1, 0, 1)}, {idem(3, 0, 1)}, {idem(2, 1, 1)}}
	unlock := s.Sequence("", reqs)
	write(t, reqs, 0, 0)
	s.Settle(reqs)
	unlock()
	require.Equal(t, kerr.InvalidProducerEpoch.Code, reqs[0][0].Answer.Code, "older than granted")
	require.Equal(t, Answer{Base: 0, Stored: true}, reqs[1][0].Answer, "a newer epoch at sequence 0")
	require.Equal(t, kerr.InvalidProducerEpoch.Code, reqs[2][0].Answer.Code, "fenced by the newer epoch the group saw")
	epoch, known := s.Epoch(Key{ID: 7})
	require.True(t, known)
	require.Equal(t, int16(3), epoch)

	other := [][]*Batch{{{Topic: "t", ProducerID: 8, Epoch: 4, FirstSeq: 0, Records: 1}}}
	unlock = s.Sequence("tenant-b", other)
	unlock()
	epoch, known = s.Epoch(Key{Scope: "tenant-b", ID: 8})
	require.True(t, known)
	require.Equal(t, int16(4), epoch)
	_, known = s.Epoch(Key{ID: 8})
	require.False(t, known, "scopes are apart")
}

// TestGroupRefusedBatchDoesNotMoveTheEpoch: a batch of a newer epoch that
// is refused, for a gap or for its own fault, leaves the producer at the
// epoch it writes at (Kafka moves it only with an append), so it cannot
// fence that producer; a newer-epoch batch that is taken does.
func TestGroupRefusedBatchDoesNotMoveTheEpoch(t *testing.T) {
	s := NewSequencer(10)
	s.Grant(Key{ID: 7}, 2)
	run := func(reqs ...[]*Batch) {
		t.Helper()
		unlock := s.Sequence("", reqs)
		write(t, reqs, 0, 0)
		s.Settle(reqs)
		unlock()
	}
	first := idem(2, 0, 1)
	run([]*Batch{first})
	require.Zero(t, first.Answer.Code)

	gap := idem(3, 5, 1)
	corrupt := idem(3, 0, 1)
	corrupt.Fault = &recordbatch.Fault{Code: kerr.CorruptMessage.Code, Msg: "crc"}
	next := idem(2, 1, 1)
	run([]*Batch{gap}, []*Batch{corrupt}, []*Batch{next})
	require.Equal(t, kerr.OutOfOrderSequenceNumber.Code, gap.Answer.Code)
	require.Equal(t, kerr.CorruptMessage.Code, corrupt.Answer.Code)
	require.Zero(t, next.Answer.Code, "epoch 2 still writes")
	epoch, _ := s.Epoch(Key{ID: 7})
	require.Equal(t, int16(2), epoch)

	bumped := idem(3, 0, 1)
	stale := idem(2, 2, 1)
	run([]*Batch{bumped}, []*Batch{stale})
	require.Zero(t, bumped.Answer.Code)
	require.Equal(t, kerr.InvalidProducerEpoch.Code, stale.Answer.Code, "fenced by the epoch taken")
}
