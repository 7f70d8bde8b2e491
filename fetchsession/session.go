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
	Partitions []Partition

	s *session // nil without a session
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
		r := &rs[i]
		cp := s.parts[f.Partitions[i].Key]
		if f.Kind != Incremental {
			carry[i] = true
		}
		if cp == nil || r.Unread {
			continue
		}
		must := r.Records || r.Error != 0 || r.HighWatermark != cp.highWatermark || r.LogStartOffset != cp.logStart
		cp.highWatermark, cp.logStart = r.HighWatermark, r.LogStartOffset
		if r.Error != 0 {
			cp.highWatermark = -1
		}
		if f.Kind == Incremental && must {
			carry[i] = true
			cp.answered = true
			moved = true
		}
	}
	if moved {
		s.moveAnsweredBack()
	}
	return carry
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
		cp := &cached{Partition: p, highWatermark: -1, logStart: -1}
		s.parts[p.Key] = cp
		s.order = append(s.order, cp)
	}
	dropped := false
	for _, k := range forgotten {
		if cp := s.parts[k]; cp != nil {
			cp.forgotten = true
			delete(s.parts, k)
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

// snapshot is the session's partitions as one fetch reads them.
func (s *session) snapshot() []Partition {
	ps := make([]Partition, len(s.order))
	for i, cp := range s.order {
		ps[i] = cp.Partition
	}
	return ps
}

// moveAnsweredBack moves the partitions marked answered behind the others,
// each group in its order, and clears the marks.
func (s *session) moveAnsweredBack() {
	order := make([]*cached, 0, len(s.order))
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
	s.order = order
}
