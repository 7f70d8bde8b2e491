package producer

import (
	"github.com/queen-mq/queen-kafka/recordbatch"
)

// Batch is one partition's batch of a produce request as sequencing sees
// it. The caller fills in the batch's header and Fault, runs Sequence,
// writes the batches it marked Write and records each one's Outcome, then
// runs Settle and answers each batch with its Answer.
type Batch struct {
	Topic      string
	Partition  int32
	ProducerID int64 // < 0: not idempotent, written whenever it decoded
	Epoch      int16
	FirstSeq   int32
	Records    int32
	// Fault is a batch that did not decode: it is answered with it only if
	// sequencing would have written it (a repeat or a refused sequence is
	// answered as such first).
	Fault *recordbatch.Fault

	// Write is Sequence's decision: write the batch's records.
	Write bool
	// Outcome is what the write of a Write batch did, recorded by the
	// caller before Settle.
	Outcome Outcome
	// Answer is Settle's: what the batch is answered.
	Answer Answer

	// What sequencing decided besides Write: refused with seqCode, or a
	// repeat of dupOf (a batch earlier in the group) or of a batch written
	// before the group at dupBase. epochBefore is the producer's epoch as
	// the batch met it.
	key         windowKey
	lastSeq     int32
	seqCode     int16
	dup         bool
	dupOf       *Batch
	dupBase     int64
	epochBefore int16
}

// Outcome is what a write did with one batch: stored at Base, or refused
// with Code and Msg. Duplicate is a write Queen's dedup window answered
// with the offsets an earlier write of the same records got (a retry whose
// first answer was lost): nothing was stored this time.
type Outcome struct {
	Base      int64
	Code      int16
	Msg       string
	Duplicate bool
}

// Answer is what a batch is answered: refused with Code (and Msg, empty
// for a sequence refusal), or at Base, which Stored says this batch's own
// write gave (a repeat, found in the window or by Queen's dedup window, is
// answered with its first write's offset).
type Answer struct {
	Code   int16
	Msg    string
	Base   int64
	Stored bool
}

// idempotent reports whether the batch carries a producer id, and so is
// sequenced.
func (b *Batch) idempotent() bool { return b.ProducerID >= 0 }

// seqProjection is a group's view of its producers' epochs and windows as
// the group's batches so far would leave them; owners names the batch of
// the group in each ring slot (nil: remembered before the group).
type seqProjection struct {
	epochs  map[Key]int16
	windows map[windowKey]*projectedWindow
}

type projectedWindow struct {
	w      seqWindow
	owners [seqWindowBatches]*Batch
}

// Sequence decides the batches of a group of produce requests (reqs[i]
// are request i's batches, in request order) of one scope. It locks the
// producers of the idempotent batches and decides each batch, in order,
// against a projection of their epochs and windows, so that a batch of
// request 2 follows request 1's batch of the same producer-partition: a
// gap refuses only that batch, a repeat of an earlier batch is answered
// with that batch's offsets, and the rest are marked Write. A batch without
// a producer id is written whenever it decoded. The returned unlock
// releases the producers once the group is settled.
func (s *Sequencer) Sequence(scope string, reqs [][]*Batch) (unlock func()) {
	var pkeys []Key
	epochs := make(map[Key]int16)
	firstReq := make(map[Key]int)
	for ri, r := range reqs {
		for _, b := range r {
			if !b.idempotent() {
				continue
			}
			k := Key{Scope: scope, ID: b.ProducerID}
			pkeys = append(pkeys, k)
			// A producer is created at the epoch the first request naming
			// it carries (its last batch's, as that request alone would).
			if fr, ok := firstReq[k]; !ok || fr == ri {
				firstReq[k], epochs[k] = ri, b.Epoch
			}
		}
	}
	unlock = func() {}
	var held map[Key]*producerState
	if len(pkeys) > 0 {
		held, unlock = s.lockProducers(pkeys, epochs)
	}
	proj := seqProjection{epochs: make(map[Key]int16), windows: make(map[windowKey]*projectedWindow)}
	for _, r := range reqs {
		for _, b := range r {
			if !b.idempotent() {
				b.Write = b.Fault == nil
				continue
			}
			pk := Key{Scope: scope, ID: b.ProducerID}
			b.key = windowKey{producer: pk, topic: b.Topic, partition: b.Partition}
			b.lastSeq = seqAdd(b.FirstSeq, b.Records-1)
			pe, ok := proj.epochs[pk]
			if !ok {
				pe = held[pk].epoch
			}
			pw := proj.windows[b.key]
			if pw == nil {
				pw = &projectedWindow{w: seqWindow{key: b.key, epoch: -1}}
				if w := s.window(b.key, false); w != nil {
					pw.w = *w
				}
				proj.windows[b.key] = pw
			}
			epoch := b.Epoch
			b.epochBefore = pe
			v, at := decideSeq(&pe, &pw.w, epoch, b.FirstSeq, b.lastSeq)
			if b.Fault != nil && !v.dup {
				pe = b.epochBefore // refused for its own fault: nothing moves
			}
			proj.epochs[pk] = pe
			switch {
			case v.code != 0:
				b.seqCode = v.code
			case v.dup:
				b.dup, b.dupBase = true, v.base
				b.dupOf = pw.owners[at] // nil: written before the group
			case b.Fault != nil:
			default:
				b.Write = true
				if pw.w.epoch != epoch {
					pw.owners = [seqWindowBatches]*Batch{}
				}
				pw.owners[pw.w.accept(epoch, seqBatch{first: b.FirstSeq, last: b.lastSeq, base: -1})] = b
			}
		}
	}
	// A producer's epoch moves with every batch the group takes (to write,
	// or a duplicate), whether its write then lands or not, never with one
	// refused: the projection's is the one the group leaves.
	for pk, e := range proj.epochs {
		held[pk].epoch = e
	}
	return unlock
}

// Settle answers every batch of a sequenced group in request order, before
// its unlock. An idempotent batch keeps the projection's verdict, and a
// written one is remembered in its window, unless a batch of the same
// window before it in the group failed its write: the window then stands
// where running the requests one by one would have left it, so the batch
// is decided again against it. A batch is answered as written only if it
// was.
func (s *Sequencer) Settle(reqs [][]*Batch) {
	broken := make(map[windowKey]bool)
	for _, r := range reqs {
		for _, b := range r {
			switch {
			case !b.idempotent():
				b.settleWrite()
			case broken[b.key]:
				b.settleBehindFailure(s)
			case b.seqCode != 0:
				b.refuse(b.seqCode, "")
			case b.dupOf != nil:
				// Its original, earlier in the group, was written: the
				// window is not broken.
				b.Answer = Answer{Base: b.dupOf.Outcome.Base}
			case b.dup:
				b.Answer = Answer{Base: b.dupBase} // answered as the first time, written once
			case b.Write:
				if b.settleWrite() {
					s.accepted(b.key, b.Epoch, b.FirstSeq, b.lastSeq, b.Outcome.Base)
				} else {
					broken[b.key] = true
					s.pin(b.key, b.Epoch, b.FirstSeq)
				}
			default:
				b.refuse(b.Fault.Code, b.Fault.Msg)
			}
		}
	}
}

// settleBehindFailure decides a batch whose window lost an earlier batch
// of the group to a failed write, against the window as it stands.
func (b *Batch) settleBehindFailure(s *Sequencer) {
	e := b.epochBefore
	v, _ := decideSeq(&e, s.window(b.key, false), b.Epoch, b.FirstSeq, b.lastSeq)
	switch {
	case v.code != 0:
		b.refuse(v.code, "")
	case v.dup:
		b.Answer = Answer{Base: v.base}
	case b.Write:
		// Alone it would have been written too: its own write decides.
		if b.settleWrite() {
			s.accepted(b.key, b.Epoch, b.FirstSeq, b.lastSeq, b.Outcome.Base)
		}
	case b.dupOf != nil:
		// A repeat of the failed batch: not written either, and retried
		// like its original.
		b.refuse(b.dupOf.Outcome.Code, b.dupOf.Outcome.Msg)
	case b.Fault != nil:
		b.refuse(b.Fault.Code, b.Fault.Msg)
	default:
		// Refused behind the failed batch; alone it would have been
		// taken, but nothing of it was written.
		code := b.seqCode
		if code == 0 {
			code = behindFailedWrite
		}
		b.refuse(code, "")
	}
}

// settleWrite answers a batch that is not sequenced (or that sequencing
// kept) from its write, reporting whether it was stored.
func (b *Batch) settleWrite() bool {
	switch {
	case b.Fault != nil:
		b.refuse(b.Fault.Code, b.Fault.Msg)
		return false
	case b.Outcome.Code != 0:
		b.refuse(b.Outcome.Code, b.Outcome.Msg)
		return false
	}
	b.Answer = Answer{Base: b.Outcome.Base, Stored: !b.Outcome.Duplicate}
	return true
}

func (b *Batch) refuse(code int16, msg string) { b.Answer = Answer{Code: code, Msg: msg, Base: -1} }
