package producer

import (
	"cmp"
	"container/list"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Idempotent produce (seed 001, "Transactions and the idempotent producer").
// The facade keeps, per (producer, topic, partition), the window Kafka keeps
// in its log: the last five batches' sequence ranges and the offsets they
// got. A retried batch is answered from it and not written again; a gap is
// refused. The window is process memory and bounded: a restart or an
// eviction forgets it, and the next batch then starts a new window, its
// retries deduplicated by Queen through each record's DedupKey.
const seqWindowBatches = 5 // Kafka's max.in.flight for an idempotent producer

// Key names one producer. Scope is the connection identity: producer ids
// are allocated per tenant, so two tenants' equal ids are two producers.
type Key struct {
	Scope string
	ID    int64
}

// windowKey names one sequence window: a producer's topic-partition.
type windowKey struct {
	producer  Key
	topic     string
	partition int32
}

// seqBatch is one remembered batch: its sequence range and base offset.
type seqBatch struct {
	first, last int32
	base        int64
}

type seqWindow struct {
	key     windowKey
	epoch   int16
	batches [seqWindowBatches]seqBatch // ring; newest at head-1
	n, head int
	elem    *list.Element
	// pinned is an empty window held at epoch expecting sequence from:
	// the first batch met on it failed its write (pin), so the batches
	// behind it are a gap until it is retried, as on a known window.
	pinned bool
	from   int32
	// uncertain: the last write at nextSeq failed, and it may have landed
	// (a push whose answer was lost). A batch behind it is refused with a
	// retriable code rather than OUT_OF_ORDER_SEQUENCE_NUMBER: that gap is
	// the client's retry still to come, and librdkafka answers an
	// out-of-order refusal by bumping its epoch and sending the failed
	// records again under new dedup keys, storing them twice (found by
	// TestChaos after a queen-dev restart).
	uncertain bool
	// at is when the newest batch was accepted, in ms (DescribeProducers'
	// last timestamp).
	at int64
}

// known reports whether the window decides sequences: it remembers a
// batch, or was pinned by a failed first write.
func (w *seqWindow) known() bool { return w != nil && (w.n > 0 || w.pinned) }

// nextSeq is the sequence the window expects next. Sequences wrap from
// MaxInt32 to 0, as Kafka's do.
func (w *seqWindow) nextSeq() int32 {
	if w.n == 0 {
		return w.from
	}
	return seqAdd(w.batches[(w.head+seqWindowBatches-1)%seqWindowBatches].last, 1)
}

// find returns the remembered batch first..last and its ring slot (-1 none).
func (w *seqWindow) find(first, last int32) (seqBatch, int) {
	for i := 0; i < w.n; i++ {
		at := (w.head + seqWindowBatches - 1 - i) % seqWindowBatches
		if b := w.batches[at]; b.first == first && b.last == last {
			return b, at
		}
	}
	return seqBatch{}, -1
}

// accept remembers b as written at epoch, starting a window of an older
// epoch over, and returns the ring slot b went to.
func (w *seqWindow) accept(epoch int16, b seqBatch) int {
	if w.epoch != epoch {
		*w = seqWindow{key: w.key, epoch: epoch, elem: w.elem}
	}
	w.uncertain = false
	at := w.head
	w.batches[at] = b
	w.head = (w.head + 1) % seqWindowBatches
	w.n = min(w.n+1, seqWindowBatches)
	return at
}

// seqAdd adds n to a sequence number with Kafka's wrap at MaxInt32.
func seqAdd(s int32, n int32) int32 {
	v := int64(s) + int64(n)
	if v > math.MaxInt32 {
		v -= math.MaxInt32 + 1
	}
	return int32(v)
}

// producerState is what the facade knows of one producer id. mu serialises
// that producer's produces (held across the push), so two in-flight batches
// of one producer-partition — an original and its retry arriving on two
// connections — are sequenced one after the other and never both written.
type producerState struct {
	mu sync.Mutex
	// epoch is the newest epoch granted or seen.
	epoch int16
	elem  *list.Element
	// pins counts the callers holding or waiting for mu (guarded by the
	// Sequencer's mu): a pinned state is never evicted, or a retry
	// arriving meanwhile would make a second state of the same producer
	// and lock that one, and the two would be written side by side.
	pins int
}

// Sequencer holds every window and producer of a node, both bounded and
// evicted least recently used first. Its own mutex guards only the maps and
// lists; a window's content is guarded by its producer's mu.
type Sequencer struct {
	mu        sync.Mutex
	max       int
	windows   map[windowKey]*seqWindow
	wlru      list.List // windowKey, most recent at the front
	producers map[Key]*producerState
	plru      list.List // Key
	// evicted counts what the bound pushed out: producers, windows.
	evictedProducers, evictedWindows uint64
}

// Stats is what a sequencer holds and has evicted, for /metrics.
type Stats struct {
	Producers, Windows               int
	EvictedProducers, EvictedWindows uint64
}

// Stats reads the sequencer's sizes and eviction counts.
func (s *Sequencer) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{Producers: len(s.producers), Windows: len(s.windows), EvictedProducers: s.evictedProducers, EvictedWindows: s.evictedWindows}
}

// NewSequencer returns a sequencer tracking at most max producers and max
// producer-partitions (windows), the least recently used evicted past it.
func NewSequencer(max int) *Sequencer {
	return &Sequencer{max: max, windows: make(map[windowKey]*seqWindow), producers: make(map[Key]*producerState)}
}

// producer returns the state of k, creating it at epoch, pinned: it stays
// k's state until the caller unpins it, which it does once it no longer
// holds or waits for its mu.
func (s *Sequencer) producer(k Key, epoch int16) *producerState {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.producers[k]; ok {
		s.plru.MoveToFront(p.elem)
		p.pins++
		return p
	}
	p := &producerState{epoch: epoch, pins: 1}
	p.elem = lruPut(s.producers, &s.plru, s.max, k, p, &s.evictedProducers, func(p *producerState) bool { return p.pins == 0 })
	return p
}

// unpin ends a caller's hold on p (from producer).
func (s *Sequencer) unpin(p *producerState) {
	s.mu.Lock()
	p.pins--
	s.mu.Unlock()
}

// lruPut stores v under k in m as its most recently used entry (order holds
// m's keys, most recent at the front) and, while m holds more than max,
// evicts the least recently used entries that evictable allows, counting
// them in evicted (m outgrows max only by entries in use, and shrinks back
// at the next insertion after they are given back). It returns k's element
// in order, which each use of the entry moves to the front.
func lruPut[K comparable, V any](m map[K]V, order *list.List, max int, k K, v V, evicted *uint64, evictable func(V) bool) *list.Element {
	e := order.PushFront(k)
	m[k] = v
	for old := order.Back(); len(m) > max && old != e; {
		prev := old.Prev()
		if ok := old.Value.(K); evictable(m[ok]) {
			order.Remove(old)
			delete(m, ok)
			*evicted++
		}
		old = prev
	}
	return e
}

// lockProducers locks the producers of keys (deduplicated, in a fixed order
// so that two requests never wait on each other) and returns them by key.
func (s *Sequencer) lockProducers(keys []Key, epochs map[Key]int16) (map[Key]*producerState, func()) {
	slices.SortFunc(keys, func(a, b Key) int {
		if c := cmp.Compare(a.Scope, b.Scope); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	keys = slices.Compact(keys)
	held := make(map[Key]*producerState, len(keys))
	order := make([]*producerState, 0, len(keys))
	for _, k := range keys {
		p := s.producer(k, epochs[k])
		p.mu.Lock()
		held[k] = p
		order = append(order, p)
	}
	return held, func() {
		for i := len(order) - 1; i >= 0; i-- {
			order[i].mu.Unlock()
			s.unpin(order[i])
		}
	}
}

// seqVerdict is decideSeq's answer for one batch: refuse with code, answer a
// duplicate from the window, or accept and remember after the write.
type seqVerdict struct {
	code int16
	dup  bool
	base int64
}

// decideSeq decides a batch covering sequences first..last at epoch
// against a producer epoch and a window (nil: none held), either the live
// ones, under the producer's mu, or a coalesced group's projection of them;
// a duplicate's ring slot is returned too (-1 otherwise). Stale epochs are
// INVALID_PRODUCER_EPOCH, Apache Kafka's answer to a produce from a fenced
// idempotent producer. A window the facade does not hold (a restart, an
// eviction, a producer whose connection moved from another node) accepts
// any sequence and starts there, as Apache Kafka 3.9 accepts a producer it
// has no state for: every record of the batch carries its DedupKey, so a
// retry of a batch Queen already stored is answered by Queen's dedup window
// with the original offsets and written once (issue 9, retiring seed 001's
// refusal). A known window of an older epoch accepts only sequence 0, the
// first batch of a new epoch; a known window of this epoch refuses a gap
// OUT_OF_ORDER_SEQUENCE_NUMBER.
func decideSeq(producerEpoch *int16, w *seqWindow, epoch int16, first, last int32) (seqVerdict, int) {
	if epoch < *producerEpoch {
		return seqVerdict{code: kerr.InvalidProducerEpoch.Code}, -1
	}
	v, at := decideWindow(w, epoch, first, last)
	if v.code == 0 {
		// Taken (to write, or a duplicate): the producer is at epoch now.
		// A refused batch moves nothing, as Kafka moves a producer's epoch
		// only with an append, so a batch of a newer epoch that is a gap
		// cannot fence the epoch the producer still writes at.
		*producerEpoch = max(*producerEpoch, epoch)
	}
	return v, at
}

// decideWindow is decideSeq's verdict from the window alone.
func decideWindow(w *seqWindow, epoch int16, first, last int32) (seqVerdict, int) {
	switch {
	case !w.known():
		return seqVerdict{}, -1
	case w.epoch < epoch:
		if first != 0 {
			return seqVerdict{code: kerr.OutOfOrderSequenceNumber.Code}, -1
		}
		return seqVerdict{}, -1
	case w.epoch > epoch:
		return seqVerdict{code: kerr.InvalidProducerEpoch.Code}, -1
	}
	if b, at := w.find(first, last); at >= 0 {
		return seqVerdict{dup: true, base: b.base}, at
	}
	if first != w.nextSeq() {
		if w.pinned || w.uncertain {
			return seqVerdict{code: behindFailedWrite}, -1
		}
		return seqVerdict{code: kerr.OutOfOrderSequenceNumber.Code}, -1
	}
	return seqVerdict{}, -1
}

// behindFailedWrite answers a batch behind a write that failed and was not
// retried yet: REQUEST_TIMED_OUT, retriable with nothing written, so the
// client resends both in order and Queen's dedup window answers the failed
// one if it had landed after all.
var behindFailedWrite = kerr.RequestTimedOut.Code

// accepted remembers a batch written at base. A window of an older epoch is
// started over.
func (s *Sequencer) accepted(k windowKey, epoch int16, first, last int32, base int64) {
	w := s.window(k, true)
	w.accept(epoch, seqBatch{first: first, last: last, base: base})
	w.at = time.Now().UnixMilli()
}

// PartitionProducer is one producer's window on one partition, as
// DescribeProducers shows it.
type PartitionProducer struct {
	ID            int64
	Epoch         int16
	LastSequence  int32
	LastTimestamp int64 // when the node accepted the newest batch, in ms
}

// Producers is every producer of scope whose window on topic's partition
// the node holds with at least one batch, by producer id.
func (s *Sequencer) Producers(scope, topic string, partition int32) []PartitionProducer {
	type held struct {
		w *seqWindow
		p *producerState
	}
	var found []held
	s.mu.Lock()
	for k, w := range s.windows {
		if k.producer.Scope == scope && k.topic == topic && k.partition == partition {
			if p := s.producers[k.producer]; p != nil {
				found = append(found, held{w, p})
			}
		}
	}
	s.mu.Unlock()
	out := make([]PartitionProducer, 0, len(found))
	for _, h := range found {
		h.p.mu.Lock()
		if h.w.n > 0 {
			out = append(out, PartitionProducer{ID: h.w.key.producer.ID, Epoch: h.w.epoch, LastSequence: h.w.batches[(h.w.head+seqWindowBatches-1)%seqWindowBatches].last, LastTimestamp: h.w.at})
		}
		h.p.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b PartitionProducer) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// pin holds k's window at epoch expecting sequence first when it is not
// known yet: that batch, the first the node met on it, failed its write,
// and a batch behind it is a gap (or the batch landed and its answer was
// lost, which its retry learns from Queen's dedup window). A known window
// already stands at the failed batch, which its write did not advance.
func (s *Sequencer) pin(k windowKey, epoch int16, first int32) {
	switch w := s.window(k, true); {
	case !w.known():
		w.epoch, w.pinned, w.from = epoch, true, first
	case w.epoch == epoch:
		w.uncertain = true
	}
}

// window returns k's window (touching it), creating an empty one when
// create; creating may evict the least recently used window.
func (s *Sequencer) window(k windowKey, create bool) *seqWindow {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w, ok := s.windows[k]; ok {
		s.wlru.MoveToFront(w.elem)
		return w
	}
	if !create {
		return nil
	}
	w := &seqWindow{key: k, epoch: -1}
	// A window is guarded by its producer's mu, which a caller holding an
	// evicted one still holds: the next caller, behind that mu, finds no
	// window and decides as for a producer it holds nothing of; it never
	// writes beside the holder.
	w.elem = lruPut(s.windows, &s.wlru, s.max, k, w, &s.evictedWindows, func(*seqWindow) bool { return true })
	return w
}

// ForgetWindows drops every sequence window and returns how many it
// dropped. Cluster mode calls it at every change of the live set: a
// partition's leader may have moved away and back meanwhile, and the
// batches another node accepted in between leave this node's window behind
// the producer, so its next batch would look like a gap, be refused
// OUT_OF_ORDER_SEQUENCE_NUMBER, and be fatal to a librdkafka producer (or
// make franz-go bump its epoch and send again what was already stored, under
// new dedup keys). Without its window a node accepts the producer's next
// batch as it accepts an unknown producer's, and a retry of a batch
// already stored is still answered duplicate by Queen's dedup window. A
// window a caller holds is guarded by its producer's mu, as after an
// eviction.
func (s *Sequencer) ForgetWindows() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.windows)
	for _, w := range s.windows {
		s.wlru.Remove(w.elem)
	}
	clear(s.windows)
	return n
}

// Grant records that producer k was granted epoch: 0 for a freshly
// allocated id, or the epoch a transactional id was claimed at. Every older
// epoch of k is fenced from then on (INVALID_PRODUCER_EPOCH on its
// batches). The producer's lock is taken, so a grant waits for its
// in-flight produce.
func (s *Sequencer) Grant(k Key, epoch int16) {
	p := s.producer(k, epoch)
	p.mu.Lock()
	p.epoch = epoch
	p.mu.Unlock()
	s.unpin(p)
}

// Epoch is producer k's newest epoch granted or seen; known is false for a
// producer the sequencer does not hold (never met, or evicted). It does not
// touch k's recency.
func (s *Sequencer) Epoch(k Key) (epoch int16, known bool) {
	s.mu.Lock()
	p, ok := s.producers[k]
	s.mu.Unlock()
	if !ok {
		return 0, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.epoch, true
}
