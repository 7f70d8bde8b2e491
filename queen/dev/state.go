package dev

import "sort"

// record is one stored message. Its offset is implicit (partition.base plus
// its index), so the slice of a partition is the log itself.
type record struct {
	payload []byte // JSON exactly as pushed
	msgID   string
	txID    string // the dedup key the client sent; "" means msgID
	ts      int64  // commit time, unix microseconds
}

func (r *record) transactionID() string {
	if r.txID != "" {
		return r.txID
	}
	return r.msgID
}

// partition is one (queue, partition) log. recs[0] has offset base; records
// below lso have been retired by retention (base ≤ lso ≤ hwm).
type partition struct {
	name    string
	base    int64
	recs    []record
	lso     int64
	bytes   int64 // payload bytes of retained records
	lastTS  int64
	dedup   map[string]dedupEntry // explicit transactionIds only
	waiters map[*waiter]struct{}  // parked fetches naming this partition
}

type dedupEntry struct {
	offset int64
	ts     int64
	msgID  string
}

func (p *partition) hwm() int64 { return p.base + int64(len(p.recs)) }

// at returns the record stored at offset off (lso ≤ off < hwm).
func (p *partition) at(off int64) *record { return &p.recs[off-p.base] }

type queue struct {
	name    string
	id      string
	created int64 // unix milliseconds
	opts    queueOptions
	parts   map[string]*partition
	// waiters are parked fetches naming a partition of this queue that does
	// not exist yet, by the partition's name: they are woken when it is
	// created (or the queue is replaced or deleted). Keyed by name, a write
	// that creates one partition wakes the fetches that named it, not every
	// fetch parked on a partition of the queue not written yet: a consumer
	// of 10,000 mostly unwritten partitions would otherwise re-read all of
	// them at every first write to any.
	waiters map[string]map[*waiter]struct{}
}

type tenant struct {
	name   string
	queues map[string]*queue
	kv     map[string]*kvSpace // by namespace
}

// kvSpace is one namespace of one tenant: rows by key plus the keys in byte
// order for prefix reads.
type kvSpace struct {
	rows map[string]*kvRow
	keys []string
}

// kvRow is immutable once stored: a write replaces the pointer, so a WAL
// entry or a response may keep referring to it outside the lock.
type kvRow struct {
	value   []byte
	version int64
	expires int64 // unix microseconds, 0 = forever
	updated int64 // unix microseconds
}

func (r *kvRow) live(now int64) bool { return r != nil && (r.expires == 0 || now < r.expires) }

func (s *kvSpace) get(key string) *kvRow { return s.rows[key] }

// set stores row under key (row nil removes the key).
func (s *kvSpace) set(key string, row *kvRow) {
	_, had := s.rows[key]
	if row == nil {
		if !had {
			return
		}
		delete(s.rows, key)
		i := sort.SearchStrings(s.keys, key)
		if i < len(s.keys) && s.keys[i] == key {
			s.keys = append(s.keys[:i], s.keys[i+1:]...)
		}
		return
	}
	s.rows[key] = row
	if had {
		return
	}
	i := sort.SearchStrings(s.keys, key)
	s.keys = append(s.keys, "")
	copy(s.keys[i+1:], s.keys[i:])
	s.keys[i] = key
}

// waiter is a parked fetch; a write to any partition it names signals ch.
type waiter struct {
	ch chan struct{}
}

func newWaiter() *waiter { return &waiter{ch: make(chan struct{}, 1)} }

func (w *waiter) wake() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

func wakeAll(set map[*waiter]struct{}) {
	for w := range set {
		w.wake()
	}
}

// state is everything the broker knows; guarded by Broker.mu.
type state struct {
	tenants map[string]*tenant
	kvSeq   int64 // last KV version issued, store-wide
	// mutations counts every applied change; tests use it to prove that a
	// refused request wrote nothing.
	mutations uint64
}

func newState() *state { return &state{tenants: map[string]*tenant{}} }

func (s *state) tenant(name string) *tenant {
	t := s.tenants[name]
	if t == nil {
		t = &tenant{name: name, queues: map[string]*queue{}, kv: map[string]*kvSpace{}}
		s.tenants[name] = t
	}
	return t
}

func (t *tenant) space(ns string) *kvSpace {
	sp := t.kv[ns]
	if sp == nil {
		sp = &kvSpace{rows: map[string]*kvRow{}}
		t.kv[ns] = sp
	}
	return sp
}
