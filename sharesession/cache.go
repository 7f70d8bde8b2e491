package sharesession

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The share session epochs with a meaning of their own (Kafka's
// ShareRequestMetadata).
const (
	InitialEpoch int32 = 0  // open a session (replacing the member's old one)
	FinalEpoch   int32 = -1 // close it
)

// DefaultMaxSessions is Kafka's group.share.max.share.sessions default.
const DefaultMaxSessions = 2000

// NextEpoch is the epoch that follows e (Kafka's nextEpoch: past the
// largest int32 it wraps to 1, never to 0 or -1).
func NextEpoch(e int32) int32 {
	switch {
	case e < 0:
		return FinalEpoch
	case e == 1<<31-1:
		return 1
	}
	return e + 1
}

// Key names a session: one per member of a share group on a node.
type Key struct {
	Group, Member string
}

// Partition is one share-partition of a session: a topic by id and a
// partition.
type Partition struct {
	TopicID   [16]byte
	Partition int32
}

// session is one member's session.
type session struct {
	epoch int32 // the epoch the next request must carry
	conn  uint64
	parts []Partition
	index map[Partition]struct{}
}

func (s *session) add(ps []Partition) {
	for _, p := range ps {
		if _, ok := s.index[p]; !ok {
			s.index[p] = struct{}{}
			s.parts = append(s.parts, p)
		}
	}
}

func (s *session) forget(ps []Partition) {
	if len(ps) == 0 {
		return
	}
	for _, p := range ps {
		delete(s.index, p)
	}
	kept := s.parts[:0]
	for _, p := range s.parts {
		if _, ok := s.index[p]; ok {
			kept = append(kept, p)
		}
	}
	clear(s.parts[len(kept):])
	s.parts = kept
}

// Cache is a node's share sessions. It is safe for concurrent use.
type Cache struct {
	max int

	mu       sync.Mutex
	sessions map[Key]*session
	byConn   map[uint64]map[Key]struct{}
	parts    int // partitions across the sessions
	evicted  uint64
}

// New is a cache of at most max sessions (0: DefaultMaxSessions).
func New(max int) *Cache {
	if max <= 0 {
		max = DefaultMaxSessions
	}
	return &Cache{max: max, sessions: make(map[Key]*session), byConn: make(map[uint64]map[Key]struct{})}
}

// Fetch is a ShareFetch's session step, before anything else of the
// request is done. epoch 0 opens a session of add (an old one of the
// member is dropped without release, as Kafka drops it) and is
// INVALID_REQUEST when the request acknowledges anything (a new session
// holds nothing to acknowledge); epoch -1 checks the session exists, fetches
// nothing and leaves it open until Close (the request's acknowledgements
// come first); any other epoch must be the session's next (it then
// advances), adding and forgetting partitions. fetch is the partitions to
// read, in the session's order; code is the top-level refusal.
func (c *Cache) Fetch(k Key, conn uint64, epoch int32, add, forget []Partition, acks bool) (fetch []Partition, code int16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[k]
	switch epoch {
	case FinalEpoch:
		if s == nil {
			return nil, kerr.ShareSessionNotFound.Code
		}
		return nil, 0
	case InitialEpoch:
		if acks {
			return nil, kerr.InvalidRequest.Code
		}
		if s != nil {
			c.remove(k, s)
		} else if len(c.sessions) >= c.max {
			return nil, kerr.ShareSessionLimitReached.Code
		}
		s = &session{epoch: NextEpoch(InitialEpoch), conn: conn, index: make(map[Partition]struct{}, len(add))}
		s.add(add)
		c.sessions[k] = s
		c.parts += len(s.parts)
		c.attach(k, conn)
		return append([]Partition(nil), s.parts...), 0
	}
	if s == nil {
		return nil, kerr.ShareSessionNotFound.Code
	}
	if epoch != s.epoch {
		return nil, kerr.InvalidShareSessionEpoch.Code
	}
	before := len(s.parts)
	s.add(add)
	s.forget(forget)
	c.parts += len(s.parts) - before
	s.epoch = NextEpoch(s.epoch)
	if s.conn != conn {
		c.detach(k, s.conn)
		s.conn = conn
		c.attach(k, conn)
	}
	return append([]Partition(nil), s.parts...), 0
}

// Acknowledge is a ShareAcknowledge's session step: epoch 0 is
// INVALID_SHARE_SESSION_EPOCH (a ShareAcknowledge never opens a session),
// an unknown session SHARE_SESSION_NOT_FOUND, -1 is accepted as is (Close
// follows the acknowledgements), any other epoch must be the session's next,
// which then advances.
func (c *Cache) Acknowledge(k Key, epoch int32) (code int16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if epoch == InitialEpoch {
		return kerr.InvalidShareSessionEpoch.Code
	}
	s := c.sessions[k]
	switch {
	case s == nil:
		return kerr.ShareSessionNotFound.Code
	case epoch == FinalEpoch:
		return 0
	case epoch != s.epoch:
		return kerr.InvalidShareSessionEpoch.Code
	}
	s.epoch = NextEpoch(s.epoch)
	return 0
}

// Close ends k's session (epoch -1, after its request's acknowledgements)
// and returns its partitions, whose records the member may still hold.
func (c *Cache) Close(k Key) []Partition {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[k]
	if s == nil {
		return nil
	}
	c.remove(k, s)
	return s.parts
}

// Ended is a session that ended without a final epoch.
type Ended struct {
	Key        Key
	Partitions []Partition
}

// Disconnected ends the sessions last used on connection conn, as Kafka
// evicts a share session when its client's connection closes, and returns
// them: their members' records are the caller's to release.
func (c *Cache) Disconnected(conn uint64) []Ended {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Ended
	for k := range c.byConn[conn] {
		if s := c.sessions[k]; s != nil {
			c.remove(k, s)
			c.evicted++
			out = append(out, Ended{Key: k, Partitions: s.parts})
		}
	}
	delete(c.byConn, conn)
	return out
}

// Stats is the cache's size and evictions (Kafka's ShareSessionsCount,
// SharePartitionsCount, ShareSessionEvictionsPerSec).
type Stats struct {
	Sessions, Partitions int
	Evictions            uint64
}

// Stats are the cache's figures now.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Sessions: len(c.sessions), Partitions: c.parts, Evictions: c.evicted}
}

// Epoch is the epoch k's next request must carry (ok false: no session).
func (c *Cache) Epoch(k Key) (epoch int32, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.sessions[k]; s != nil {
		return s.epoch, true
	}
	return 0, false
}

func (c *Cache) remove(k Key, s *session) {
	delete(c.sessions, k)
	c.parts -= len(s.parts)
	c.detach(k, s.conn)
}

func (c *Cache) attach(k Key, conn uint64) {
	m := c.byConn[conn]
	if m == nil {
		m = make(map[Key]struct{})
		c.byConn[conn] = m
	}
	m[k] = struct{}{}
}

func (c *Cache) detach(k Key, conn uint64) {
	if m := c.byConn[conn]; m != nil {
		delete(m, k)
		if len(m) == 0 {
			delete(c.byConn, conn)
		}
	}
}
