package fetchsession

import (
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Defaults are Kafka's: max.incremental.fetch.session.cache.slots and
// min.incremental.fetch.session.eviction.ms. DefaultMaxPartitions has no
// Kafka counterpart (Kafka bounds slots only); it keeps a cache of
// sessions with huge partition sets to about 100 MB.
const (
	DefaultSlots         = 1000
	DefaultEvictAfter    = 120 * time.Second
	DefaultMaxPartitions = 500_000
)

// The session epochs of KIP-227: a request at InitialEpoch opens a new
// session, one at FinalEpoch fetches without one.
const (
	InitialEpoch int32 = 0
	FinalEpoch   int32 = -1
)

// Config bounds a Cache. A zero field takes its default.
type Config struct {
	Slots         int           // sessions cached at most
	EvictAfter    time.Duration // unused (or young) for longer than this, a session may be evicted
	MaxPartitions int           // partitions cached at most, across every session
	Now           func() time.Time
}

// Cache is one node's fetch sessions. It is safe for concurrent use.
type Cache struct {
	cfg Config

	mu         sync.Mutex // guards sessions and partitions; taken before any session's lock
	sessions   map[int32]*session
	partitions int // cached partitions, across sessions (as of each one's last use)
	stats      Stats
}

// Stats is what the cache has done, for the metrics (Kafka's
// FetchSessionCache gauges and meter, plus the kinds of fetch).
type Stats struct {
	Sessions   int // sessions cached now (NumIncrementalFetchSessions)
	Partitions int // partitions cached now (NumIncrementalFetchPartitionsCached)
	Evictions  uint64

	Full, Incremental, Sessionless uint64 // fetches, by kind
	// Refused are fetches answered a request-level error, by the error:
	// FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH,
	// FETCH_SESSION_TOPIC_ID_ERROR.
	NotFound, InvalidEpoch, TopicIDError uint64
}

// New returns an empty cache bounded by cfg.
func New(cfg Config) *Cache {
	if cfg.Slots <= 0 {
		cfg.Slots = DefaultSlots
	}
	if cfg.EvictAfter <= 0 {
		cfg.EvictAfter = DefaultEvictAfter
	}
	if cfg.MaxPartitions <= 0 {
		cfg.MaxPartitions = DefaultMaxPartitions
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Cache{cfg: cfg, sessions: make(map[int32]*session)}
}

// Stats reads the cache's counters.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Sessions, s.Partitions = len(c.sessions), c.partitions
	return s
}

// NextEpoch is the epoch after e: FinalEpoch stays, and the epoch wraps
// from the largest int32 to 1, never to 0, which would open a new session.
func NextEpoch(e int32) int32 {
	switch {
	case e < 0:
		return FinalEpoch
	case e == math.MaxInt32:
		return 1
	}
	return e + 1
}

// Begin decides what one fetch request is, from its session id and epoch
// (KIP-227), and applies it to the cache:
//   - epoch -1: a sessionless fetch; a named session is closed first. Its
//     Partitions are the request's as named: a reader that does not prove
//     them distinct another way (the node's watch does) takes Distinct;
//   - epoch 0: a full fetch opening a new session (a named one is closed
//     first), if the cache has or can evict room for it; if not, the fetch
//     is answered in full with session id 0, as Kafka does. Its Partitions
//     are Distinct;
//   - epoch > 0: the next fetch of the session named: its partitions are
//     the session's, updated with the request's and less the forgotten
//     ones. An unknown session, or one created by another owner, is
//     FETCH_SESSION_ID_NOT_FOUND; an epoch other than the session's is
//     INVALID_FETCH_SESSION_EPOCH; a session opened by topic id fetched by
//     name (or the other way round) is FETCH_SESSION_TOPIC_ID_ERROR.
//
// The caller reads Fetch.Partitions, in order, and reports what it read
// through Fetch.Answer. A fetch with an Error is answered with that code
// alone.
func (c *Cache) Begin(r Request) *Fetch {
	now := c.cfg.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.Epoch == FinalEpoch || r.Epoch == InitialEpoch {
		if r.ID != 0 {
			// Closing a session is only its owner's to do.
			if s := c.sessions[r.ID]; s != nil && s.owner == r.Owner {
				c.remove(s)
			}
		}
		if r.Epoch == FinalEpoch {
			c.stats.Sessionless++
			return &Fetch{Kind: Sessionless, Partitions: r.Partitions}
		}
		c.stats.Full++
		f := &Fetch{Kind: Full, Partitions: Distinct(r.Partitions)}
		size := len(f.Partitions)
		full := func() bool { return len(c.sessions) >= c.cfg.Slots || c.partitions+size > c.cfg.MaxPartitions }
		if full() && (!c.tryEvict(size, now) || full()) {
			return f // no room: answered in full, without a session
		}
		r.Partitions = f.Partitions
		s := newSession(c.newID(), r, now)
		c.sessions[s.id] = s
		c.partitions += len(s.parts)
		f.ID, f.s = s.id, s
		return f
	}

	s := c.sessions[r.ID]
	switch {
	case s == nil || s.owner != r.Owner:
		c.stats.NotFound++
		return &Fetch{Kind: Incremental, Error: kerr.FetchSessionIDNotFound.Code}
	case s.usesIDs != r.UsesIDs:
		c.stats.TopicIDError++
		return &Fetch{Kind: Incremental, Error: kerr.FetchSessionTopicIDError.Code}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.epoch != r.Epoch {
		c.stats.InvalidEpoch++
		return &Fetch{Kind: Incremental, Error: kerr.InvalidFetchSessionEpoch.Code}
	}
	before := len(s.parts)
	s.update(r.Partitions, r.Forgotten)
	if c.partitions+len(s.parts)-before > c.cfg.MaxPartitions {
		// The session outgrew the bound: it is closed, and the client's
		// full fetch that follows is answered without one.
		c.remove(s)
		c.stats.NotFound++
		return &Fetch{Kind: Incremental, Error: kerr.FetchSessionIDNotFound.Code}
	}
	s.epoch = NextEpoch(s.epoch)
	c.stats.Incremental++
	c.touch(s, now)
	return &Fetch{Kind: Incremental, ID: s.id, Partitions: s.snapshot(), s: s, buf: true}
}

// newID draws a positive session id not in use (Kafka's are random too, so
// a restarted node is unlikely to mint an id a client still holds).
func (c *Cache) newID() int32 {
	for {
		id := rand.Int32N(math.MaxInt32) + 1
		if c.sessions[id] == nil {
			return id
		}
	}
}

// touch records s's use at now and its size (c.mu held).
func (c *Cache) touch(s *session, now time.Time) {
	c.partitions += len(s.parts) - s.cachedSize
	s.cachedSize = len(s.parts)
	s.lastUsed = now
}

// remove drops s from the cache (c.mu held).
func (c *Cache) remove(s *session) {
	if c.sessions[s.id] != s {
		return
	}
	delete(c.sessions, s.id)
	c.partitions -= s.cachedSize
	s.close()
}

// tryEvict makes room for a new session of size partitions, by Kafka's
// FetchSessionCache rules for a session that is not privileged (a
// consumer's; only follower brokers' are privileged, and there are none):
// the least recently used session goes if it has been unused for longer
// than EvictAfter; failing that, of the sessions created longer than
// EvictAfter ago, the one with the fewest partitions (then the lowest id)
// goes if the new session has strictly more partitions. A young session is
// never evicted for size, so a newcomer cannot push out a session that has
// not had time to pay for itself. c.mu held.
func (c *Cache) tryEvict(size int, now time.Time) bool {
	var lru, small *session
	for _, s := range c.sessions {
		if lru == nil || s.lastUsed.Before(lru.lastUsed) || (s.lastUsed.Equal(lru.lastUsed) && s.id < lru.id) {
			lru = s
		}
		if now.Sub(s.created) > c.cfg.EvictAfter &&
			(small == nil || s.cachedSize < small.cachedSize || (s.cachedSize == small.cachedSize && s.id < small.id)) {
			small = s
		}
	}
	switch {
	case lru == nil:
		return false
	case now.Sub(lru.lastUsed) > c.cfg.EvictAfter:
		c.remove(lru)
	case small != nil && size > small.cachedSize:
		c.remove(small)
	default:
		return false
	}
	c.stats.Evictions++
	return true
}

// Distinct is ps with each partition once, where the request first named
// it and with what it asked last, as Kafka reads a fetch's partitions into
// a map: a request naming one partition a million times is one read, not a
// million. ps itself, unchanged, when no partition repeats.
func Distinct(ps []Partition) []Partition {
	if !repeats(ps) {
		return ps
	}
	at := make(map[Key]int, len(ps))
	out := make([]Partition, 0, len(ps))
	for _, p := range ps {
		if i, ok := at[p.Key]; ok {
			out[i] = p
			continue
		}
		at[p.Key] = len(out)
		out = append(out, p)
	}
	return out
}

// repeats tells whether a partition of ps may repeat, without a map for
// the usual request: each topic in one run of partitions in ascending
// order, or in ascending order rotated (librdkafka starts each fetch at
// the next partition, for fairness). Anything else (a topic in two runs,
// partitions in another order) is "may" and left to Distinct's map.
func repeats(ps []Partition) bool {
	var topics map[Key]struct{} // a run's topic, partition zero
	for i := 0; i < len(ps); {
		j, wrapped := i+1, false
		for ; j < len(ps) && ps[j].Topic == ps[i].Topic && ps[j].ID == ps[i].ID; j++ {
			p := ps[j].Partition
			if p <= ps[j-1].Partition {
				if wrapped {
					return true
				}
				wrapped = true
			}
			if wrapped && p >= ps[i].Partition {
				return true
			}
		}
		if i == 0 && j == len(ps) {
			return false
		}
		if topics == nil {
			topics = make(map[Key]struct{})
		}
		t := Key{Topic: ps[i].Topic, ID: ps[i].ID}
		if _, seen := topics[t]; seen {
			return true
		}
		topics[t] = struct{}{}
		i = j
	}
	return false
}
