package fetchsession

import (
	"sync"
	"time"
)

// Key names a partition in a session: by topic name in a session opened
// below Fetch v13, by topic id (Topic empty) in one opened at v13 or above.
type Key struct {
	Topic     string
	ID        [16]byte
	Partition int32
}

// Partition is one partition as a fetch request asks for it.
type Partition struct {
	Key
	FetchOffset int64
	MaxBytes    int32
	// Slot names the partition in its session, in an incremental fetch's
	// Partitions: a small number, unique among the session's partitions
	// and kept while the partition stays; a forgotten partition's is given
	// to the next one added. The node's watch indexes by it (a slice, not a
	// map keyed by topic name, on every fetch of every partition).
	Slot int32
	// SlotGen tells the slot's partitions apart over time: it changes each
	// time the slot is given to a partition, so a watch that knew the
	// slot's last partition sees it is another one.
	SlotGen uint32
}

// Request is the session side of one fetch request.
type Request struct {
	Owner      string // the connection's identity (its tenant); "" without SASL
	ID         int32  // session_id
	Epoch      int32  // session_epoch
	UsesIDs    bool   // the request addresses topics by id (v13+)
	Partitions []Partition
	Forgotten  []Key // forgotten_topics_data
}

// Kind is what a fetch is to the session protocol.
type Kind uint8

const (
	Sessionless Kind = iota // epoch -1, or a version without sessions
	Full                    // epoch 0: every partition asked, every partition answered
	Incremental             // epoch > 0: the session's partitions, the changed ones answered
)

func (k Kind) String() string {
	switch k {
	case Full:
		return "full"
	case Incremental:
		return "incremental"
	}
	return "sessionless"
}

// Fetch is one fetch request as the cache decided it.
type Fetch struct {
	Kind  Kind
	ID    int32 // the session id to answer with; 0 for none
	Error int16 // a request-level refusal, answered alone; 0 for none
	// Partitions are what this fetch reads, in the order the response
	// budget is spent on them: the request's for a sessionless or full
	// fetch, the session's for an incremental one.
	// An incremental fetch's Partitions are the session's reusable buffer:
	// the caller must not keep them past Answer or AnswerSome.
	Partitions []Partition

	s   *session // nil without a session
	buf bool     // Partitions is a buffer the session may reuse
}

// Attachment is what the node keeps with a session beside its partitions
// (package fetchwatch's parked reads): the cache closes it when the
// session goes, closed by its client, replaced, evicted or outgrown. Close
// must not block.
type Attachment interface{ Close() }

// Attachment is the session's attachment, nil when it has none (or the
// fetch has no session).
func (f *Fetch) Attachment() Attachment {
	if f.s == nil {
		return nil
	}
	f.s.attMu.Lock()
	defer f.s.attMu.Unlock()
	return f.s.att
}

// Attach replaces the session's attachment with a, closing the one it
// had; a fetch without a session closes a at once. A session the cache has
// already dropped closes a too, so nothing attached outlives its session.
func (f *Fetch) Attach(a Attachment) {
	if f.s == nil {
		if a != nil {
			a.Close()
		}
		return
	}
	f.s.attMu.Lock()
	old := f.s.att
	f.s.att = a
	gone := f.s.gone
	if gone {
		f.s.att = nil
	}
	f.s.attMu.Unlock()
	if old != nil && old != a {
		old.Close()
	}
	if gone && a != nil {
		a.Close()
	}
}

// Result is what reading one partition of a fetch found.
type Result struct {
	HighWatermark  int64
	LogStartOffset int64
	Error          int16
	Records        bool // the answer carries records
	// Unread is a partition the fetch did not read (the response budget
	// was spent, or the read was throttled): nothing new is known of it.
	Unread bool
}

// Answer reports what the fetch read, rs[i] for f.Partitions[i], records
// it in the session, and says which partitions the response carries:
// every one of a sessionless or full fetch; of an incremental one, those
// with records, an error, or a high watermark or log start offset other
// than the one last answered (Kafka's CachedPartition rules). A partition
// answered with an error is remembered with an unknown high watermark, so
// that it is answered again once the error is gone. The partitions
// answered move to the back of the session, in order.
func (f *Fetch) Answer(rs []Result) (carry []bool) {
	carry = make([]bool, len(f.Partitions))
	s := f.s
	if s == nil {
		for i := range carry {
			carry[i] = true
		}
		return carry
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	moved := false
	for i := range f.Partitions {
		if i >= len(rs) {
			break
		}
		c, m := f.record(s, i, &rs[i])
		carry[i], moved = c || f.Kind != Incremental, moved || m
	}
	f.finish(s, moved)
	return carry
}

// AnswerSome is Answer for an incremental fetch that read only some of its
// partitions: rs[j] is what was read of f.Partitions[idx[j]], and every
// partition not named is Unread. carry[j] says whether idx[j] is carried.
// A fetch of another kind carries every partition named.
func (f *Fetch) AnswerSome(idx []int, rs []Result) (carry []bool) {
	carry = make([]bool, len(idx))
	s := f.s
	if s == nil || f.Kind != Incremental {
		for j := range carry {
			carry[j] = true
		}
		if s != nil {
			s.mu.Lock()
			for j, i := range idx {
				f.record(s, i, &rs[j])
			}
			f.finish(s, false)
			s.mu.Unlock()
		}
		return carry
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	moved := false
	for j, i := range idx {
		c, m := f.record(s, i, &rs[j])
		carry[j], moved = c, moved || m
	}
	f.finish(s, moved)
	return carry
}

// record applies r, what was read of f.Partitions[i], to the session (s.mu
// held) and says whether an incremental answer carries it (and so moves it
// back).
func (f *Fetch) record(s *session, i int, r *Result) (carry, moved bool) {
	if i < 0 || i >= len(f.Partitions) {
		return false, false
	}
	cp := s.parts[f.Partitions[i].Key]
	if cp == nil || r.Unread {
		return false, false
	}
	must := r.Records || r.Error != 0 || r.HighWatermark != cp.highWatermark || r.LogStartOffset != cp.logStart
	cp.highWatermark, cp.logStart = r.HighWatermark, r.LogStartOffset
	if r.Error != 0 {
		cp.highWatermark = -1
	}
	if f.Kind == Incremental && must {
		cp.answered = true
		return true, true
	}
	return false, false
}

// finish moves the answered partitions back and gives the fetch's buffer
// back to the session for its next fetch (s.mu held).
func (f *Fetch) finish(s *session, moved bool) {
	if moved {
		s.moveAnsweredBack()
	}
	if f.buf && s.scratch == nil {
		s.scratch = f.Partitions[:0]
	}
	f.buf = false
	f.Partitions = nil
}

// session is one cached fetch session.
type session struct {
	id      int32
	owner   string
	usesIDs bool
	created time.Time

	// lastUsed and cachedSize are the cache's (guarded by Cache.mu).
	lastUsed   time.Time
	cachedSize int

	mu    sync.Mutex
	epoch int32 // the epoch its next fetch must carry
	parts map[Key]*cached
	order []*cached // every entry of parts, in the order fetches fill them
	// scratch is the buffer an incremental fetch's Partitions are copied
	// into, and moved the one moveAnsweredBack reorders into: a session of
	// 10,000 partitions fetched hundreds of times a second would otherwise
	// allocate both anew for every fetch. nil while a fetch holds it.
	scratch []Partition
	moved   []*cached
	slots   Slots // the partitions' Slot and SlotGen

	// attMu guards att and gone alone, so the cache can close a session's
	// attachment whatever other lock its caller holds.
	attMu sync.Mutex
	att   Attachment // closed with the session
	gone  bool       // dropped from the cache
}

// cached is one partition of a session.
type cached struct {
	Partition
	highWatermark, logStart int64 // as last answered; -1: unknown
	answered                bool  // scratch for moveAnsweredBack
	forgotten               bool  // scratch for update
}

func newSession(id int32, r Request, now time.Time) *session {
	s := &session{id: id, owner: r.Owner, usesIDs: r.UsesIDs, created: now, epoch: NextEpoch(InitialEpoch),
		parts: make(map[Key]*cached, len(r.Partitions))}
	s.update(r.Partitions, nil)
	s.cachedSize, s.lastUsed = len(s.parts), now
	return s
}

// update adds or updates ps (at the back, when new) and drops forgotten.
func (s *session) update(ps []Partition, forgotten []Key) {
	for _, p := range ps {
		if cp := s.parts[p.Key]; cp != nil {
			cp.FetchOffset, cp.MaxBytes = p.FetchOffset, p.MaxBytes
			continue
		}
		p.Slot, p.SlotGen = s.slots.Take()
		cp := &cached{Partition: p, highWatermark: -1, logStart: -1}
		s.parts[p.Key] = cp
		s.order = append(s.order, cp)
	}
	dropped := false
	for _, k := range forgotten {
		if cp := s.parts[k]; cp != nil {
			cp.forgotten = true
			delete(s.parts, k)
			s.slots.Release(cp.Slot)
			dropped = true
		}
	}
	if dropped {
		kept := s.order[:0]
		for _, cp := range s.order {
			if !cp.forgotten {
				kept = append(kept, cp)
			}
		}
		clear(s.order[len(kept):])
		s.order = kept
	}
}

// snapshot is the session's partitions as one fetch reads them, in the
// session's buffer unless another fetch holds it.
func (s *session) snapshot() []Partition {
	ps := s.scratch
	s.scratch = nil
	if cap(ps) < len(s.order) {
		ps = make([]Partition, 0, len(s.order))
	}
	ps = ps[:len(s.order)]
	for i, cp := range s.order {
		ps[i] = cp.Partition
	}
	return ps
}

// close closes the session's attachment: the cache dropped it.
func (s *session) close() {
	s.attMu.Lock()
	att := s.att
	s.att, s.gone = nil, true
	s.attMu.Unlock()
	if att != nil {
		att.Close()
	}
}

// moveAnsweredBack moves the partitions marked answered behind the others,
// each group in its order, and clears the marks.
func (s *session) moveAnsweredBack() {
	order := s.moved[:0]
	for _, cp := range s.order {
		if !cp.answered {
			order = append(order, cp)
		}
	}
	for _, cp := range s.order {
		if cp.answered {
			cp.answered = false
			order = append(order, cp)
		}
	}
	s.order, s.moved = order, s.order[:0]
}
