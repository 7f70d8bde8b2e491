package fetchwatch

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/queen-mq/queen-kafka/fetchsession"
	"github.com/queen-mq/queen-kafka/queen"
)

// Defaults. Wait is how long a parked call waits at Queen before it is
// asked again (while its session is fetched); CallBytes what one parked call
// asks over all its entries; Fresh how long an answer no fetch has taken
// stays usable; MaxCalls the node-wide bound on parked calls; Keep how long
// a partition no fetch names stays watched (a client leaves out a partition
// for a while, a full local queue in librdkafka's case, and takes it back:
// dropping it at once would regroup, and cancel, parked calls each time).
const (
	DefaultWait      = 20 * time.Second
	DefaultCallBytes = 256 << 10
	DefaultFresh     = time.Second
	DefaultMaxCalls  = 1024
	DefaultGroup     = 256
	DefaultKeep      = 10 * time.Second
)

// Reader is Queen's fetch route (queen.Client.Fetch).
type Reader interface {
	Fetch(ctx context.Context, req queen.FetchRequest) ([]queen.FetchResult, error)
}

// Calls bounds the parked calls of every watch of a node, and each
// owner's (a session's identity, its SASL tenant) share of them: a quarter,
// so one tenant's wide sessions cannot take every call and leave the
// others' to wait the plain way. It is safe for concurrent use.
type Calls struct {
	max, perOwner int
	mu            sync.Mutex
	n             int
	owners        map[string]int
}

// NewCalls returns a bound of limit parked calls (DefaultMaxCalls when
// limit <= 0), of which one owner holds at most share (a quarter when
// share <= 0; all of them when share is more).
func NewCalls(limit, share int) *Calls {
	if limit <= 0 {
		limit = DefaultMaxCalls
	}
	if share <= 0 {
		share = max(limit/4, 1)
	}
	return &Calls{max: limit, perOwner: min(share, limit), owners: map[string]int{}}
}

// Parked is the number of calls parked now.
func (c *Calls) Parked() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// Limit is the bound.
func (c *Calls) Limit() int { return c.max }

// Share is what one owner may hold of it.
func (c *Calls) Share() int { return c.perOwner }

// take holds one call for owner, unless the node's bound or the owner's
// share is reached.
func (c *Calls) take(owner string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n >= c.max || c.owners[owner] >= c.perOwner {
		return false
	}
	c.n++
	c.owners[owner]++
	return true
}

func (c *Calls) give(owner string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n--
	if c.owners[owner]--; c.owners[owner] <= 0 {
		delete(c.owners, owner)
	}
}

// Config shapes a Watch. A zero field takes its default.
type Config struct {
	Wait      time.Duration
	CallBytes int
	Fresh     time.Duration
	Group     int // partitions one call parks on, at most queen.MaxFetchEntries
	Keep      time.Duration
	Calls     *Calls // shared by a node's watches; a private bound when nil
	Owner     string // the session's identity, whose share of Calls it draws on
	Now       func() time.Time
}

func (c Config) withDefaults() Config {
	if c.Wait <= 0 {
		c.Wait = DefaultWait
	}
	c.Wait = min(c.Wait, queen.MaxFetchWaitMs*time.Millisecond)
	if c.CallBytes <= 0 {
		c.CallBytes = DefaultCallBytes
	}
	if c.Group <= 0 || c.Group > queen.MaxFetchEntries {
		c.Group = DefaultGroup
	}
	if c.Fresh <= 0 {
		c.Fresh = DefaultFresh
	}
	if c.Keep <= 0 {
		c.Keep = DefaultKeep
	}
	if c.Calls == nil {
		c.Calls = NewCalls(0, 0)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Watch is one fetch session's watched partitions. Its methods are safe for
// concurrent use; one Round runs at a time.
type Watch struct {
	cfg    Config
	reader Reader
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	members []*member // by the session's slot (fetchsession.Partition.Slot); nil where none
	live    int       // members not nil
	groups  []*group
	round   uint64    // the current (or last) round's number
	active  bool      // a Round is running
	used    time.Time // when the last round began
	done    []*group  // groups whose call ended since a round last looked
	changed chan struct{}
	loose   []*member // members in no group yet
	queues  []string  // Round.Queues' buffer
	starts  []int64   // Round.LogStarts' buffer
	named   int       // members the current round has named
	swept   uint64    // the last round sweep ran in

	// By slot, what a round reads and writes for every partition of every
	// fetch, kept out of the members so a wide session's pass runs through
	// memory in order rather than chasing one pointer a partition: the
	// slot's generation (fetchsession.Partition.SlotGen) its member is of,
	// the offset it is quiet at (cold, nothing unread; -1 when it is not),
	// the last round that named it, its place in that round's fetch and the
	// offset that round asked.
	gens  []uint32
	quiet []int64
	seen  []uint64
	idxs  []int32
	wants []int64
	lsos  []int64 // and its log start offset as last read (-1: unknown)
	at    []int64 // and when a round last named it (unix ns)

	// keys gives the partitions of a client that names every partition in
	// every fetch (a sessionless one) the slots a session would (Assign).
	keys     map[fetchsession.Key]int32
	keySlots fetchsession.Slots
	keyNamed []uint64 // by slot, the last round that named its key
	keyAt    []int64  // and when (unix ns)
}

// member is one watched partition.
type member struct {
	key   fetchsession.Key
	slot  int32
	entry queen.FetchEntry // Queue, Partition, and the offset it is watched at
	// cold: nothing was there at entry.Offset as of the last read, so a call
	// parked there waits for a write. A parked call that read records up to
	// the high watermark leaves the partition cold there, ahead of the
	// fetch that will answer them: the client asks there next.
	cold bool
	g    *group
	call *call // the last call that watched it
	// res is a parked call's answer for it (records, an error or moved
	// bounds) read from resFrom, that no fetch has taken yet; at is when it
	// came.
	res     *queen.FetchResult
	resFrom int64
	at      time.Time
}

// group is up to Config.Group members read by one call.
type group struct {
	members []*member
	call    *call  // the call in flight; nil when none
	failed  uint64 // the round in which its call last failed
}

// call is one parked call: what it asked, for whom.
type call struct {
	cancel  context.CancelFunc
	members []*member
	entries []queen.FetchEntry
}

// New returns an empty watch whose calls read through r and end with
// parent (the node's life).
func New(parent context.Context, r Reader, cfg Config) *Watch {
	ctx, cancel := context.WithCancel(parent)
	return &Watch{cfg: cfg.withDefaults(), reader: r, ctx: ctx, cancel: cancel, changed: make(chan struct{}, 1)}
}

// Reader is the reader the watch parks its calls through: a fetch through
// another credential must not use them.
func (w *Watch) Reader() Reader { return w.reader }

// Close cancels every parked call; the watch parks nothing more. It does
// not block (fetchsession.Attachment).
func (w *Watch) Close() { w.cancel() }

// closed reports that Close was called or the parent ended.
func (w *Watch) closed() bool { return w.ctx.Err() != nil }

// State is what a Round knows of one partition.
type State uint8

const (
	// Quiet: nothing new; a call is parked on it, or is about to be.
	Quiet State = iota
	// Ready: a parked call read it; Part.Result is that read, from the
	// fetch's offset.
	Ready
	// Read: its state is unknown; read it now.
	Read
)

// Part is one partition as a Round matched it.
type Part struct {
	State  State
	Entry  queen.FetchEntry   // Queue, Partition, Offset (the fetch's); MaxBytes unset
	Result *queen.FetchResult // Ready only
}

// Hit is a partition a parked call read while a Round waited.
type Hit struct {
	Idx    int // its place in the round's fetch
	Entry  queen.FetchEntry
	Result *queen.FetchResult
}

// Outcome is what a fetch answered of one partition: Next is the offset
// after the last record answered (the offset asked, when none was),
// HighWatermark and LogStartOffset the partition's, -1 when unknown; Err
// that it was answered an error.
type Outcome struct {
	Next           int64
	HighWatermark  int64
	LogStartOffset int64
	Err            bool
}

// Round is one fetch's use of a watch: Match every partition the fetch
// reads, in the fetch's order; Learn what the fetch answered of those it
// read or took; Park; Wait, Learn and Park again while the fetch waits;
// End.
type Round struct {
	w  *Watch
	n  uint64
	at int64 // when it began (unix ns)
}

// Begin starts a round, or returns nil when another round is running or
// the watch is closed: the fetch then reads without the watch.
func (w *Watch) Begin() *Round {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.active || w.closed() {
		return nil
	}
	w.active = true
	w.round++
	w.named = 0
	w.used = w.cfg.Now()
	return &Round{w: w, n: w.round, at: w.used.UnixNano()}
}

// End ends the round.
func (r *Round) End() {
	r.w.mu.Lock()
	r.w.active = false
	r.w.mu.Unlock()
}

// Match is partition p of the fetch (an incremental fetch's, whose Slot is
// set), the idx-th it reads, from queue: what the watch knows of it at
// p.FetchOffset.
func (r *Round) Match(p *fetchsession.Partition, idx int, queue string) Part {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	return r.match(p, idx, queue)
}

// Matched is a partition MatchAll did not find quiet.
type Matched struct {
	Idx int // its place in the fetch
	Part
}

// Queues is a buffer of n names the round's fetch fills for MatchAll,
// reused from round to round (a wide session is fetched hundreds of times a
// second).
func (r *Round) Queues(n int) []string {
	w := r.w
	if cap(w.queues) < n {
		w.queues = make([]string, n)
	}
	w.queues = w.queues[:n]
	return w.queues
}

// MatchAll is Match for every partition of the fetch at once, under one
// lock: ps[i] read from queues[i], or not read at all ("": refused) and so
// not named to the round. It returns the partitions that are not Quiet,
// in the fetch's order.
func (r *Round) MatchAll(ps []fetchsession.Partition, queues []string) []Matched {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	w := r.w
	var out []Matched
	for i := range ps {
		if queues[i] == "" {
			continue
		}
		p := &ps[i]
		if s := p.Slot; int(s) < len(w.quiet) && w.gens[s] == p.SlotGen && w.quiet[s] == p.FetchOffset && w.members[s] != nil {
			r.name(s, i, p.FetchOffset) // quiet where the fetch asks: nothing else to do
			continue
		}
		if part := r.match(p, i, queues[i]); part.State != Quiet {
			out = append(out, Matched{Idx: i, Part: part})
		}
	}
	return out
}

// match is Match with w.mu held.
func (r *Round) match(p *fetchsession.Partition, idx int, queue string) Part {
	w := r.w
	off := p.FetchOffset
	var m *member
	if int(p.Slot) < len(w.members) {
		m = w.members[p.Slot]
	}
	if m == nil || w.gens[p.Slot] != p.SlotGen || m.key != p.Key || m.entry.Queue != queue {
		if m != nil {
			w.drop([]*member{m})
		}
		m = &member{key: p.Key, slot: p.Slot, entry: queen.FetchEntry{Queue: queue, Partition: strconv.FormatInt(int64(p.Partition), 10), Offset: off}}
		if n := int(p.Slot) + 1; n > len(w.members) {
			w.members = grow(w.members, n)
			w.gens, w.quiet, w.seen = grow(w.gens, n), grow(w.quiet, n), grow(w.seen, n)
			w.idxs, w.wants, w.lsos, w.at = grow(w.idxs, n), grow(w.wants, n), grow(w.lsos, n), grow(w.at, n)
		}
		w.members[p.Slot], w.gens[p.Slot], w.quiet[p.Slot], w.lsos[p.Slot] = m, p.SlotGen, -1, -1
		w.live++
		w.loose = append(w.loose, m)
	}
	r.name(p.Slot, idx, off)
	if res := m.res; res != nil {
		m.res = nil
		w.sync(m)
		if m.resFrom == off && w.cfg.Now().Sub(m.at) <= w.cfg.Fresh {
			e := m.entry
			e.Offset = off
			return Part{State: Ready, Entry: e, Result: res}
		}
	}
	if m.entry.Offset != off {
		// The client moved it (a seek, or an answer it did not take whole,
		// or one too old to use): what the watch knows is of another offset.
		w.move(m, off, false)
		return Part{State: Read, Entry: m.entry}
	}
	if !m.quietAt() {
		return Part{State: Read, Entry: m.entry}
	}
	return Part{State: Quiet, Entry: m.entry}
}

// name records that this round names slot s, at its place idx in the
// fetch, asking offset off (w.mu held).
func (r *Round) name(s int32, idx int, off int64) {
	w := r.w
	if w.seen[s] != r.n {
		w.named++
	}
	w.seen[s], w.idxs[s], w.wants[s], w.at[s] = r.n, int32(idx), off, r.at
}

// move watches m at off from now on, cold or not, stopping a call parked
// with it elsewhere (w.mu held).
func (w *Watch) move(m *member, off int64, cold bool) {
	if m.entry.Offset != off && m.g != nil && m.g.call != nil {
		w.stop(m.g)
	}
	m.entry.Offset, m.cold = off, cold
	w.sync(m)
}

// sync records in the slot arrays whether m is quiet, and where (w.mu
// held): cold, with nothing unread, at its offset, and watched there by
// its group's parked call. A cold partition no call watches is read again
// by the next fetch: its group could not be parked (another of its
// partitions is not cold, or the node's bound refused), and nothing would
// notice a write to it otherwise.
func (w *Watch) sync(m *member) {
	if !w.holds(m) {
		return
	}
	if m.quietAt() {
		w.quiet[m.slot] = m.entry.Offset
	} else {
		w.quiet[m.slot] = -1
	}
}

// quietAt reports that m is quiet at its offset (see sync): its group's
// call watches it.
func (m *member) quietAt() bool {
	return m.cold && m.res == nil && m.g != nil && m.g.call != nil && m.call == m.g.call
}

// setCall makes c g's call (nil: none) and syncs its members (w.mu held).
func (w *Watch) setCall(g *group, c *call) {
	g.call = c
	for _, m := range g.members {
		w.sync(m)
	}
}

// grow is xs grown to n, zero beyond its length.
func grow[T any](xs []T, n int) []T {
	return slices.Grow(xs, n-len(xs))[:n]
}

// Learn is what the fetch answered of partition p, read or taken Ready:
// it is watched from o.Next, cold there when that is its high watermark
// (the client asks there next), read again otherwise. A partition the
// fetch did not answer needs no Learn: it is read again.
func (r *Round) Learn(p *fetchsession.Partition, o Outcome) {
	w := r.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if int(p.Slot) >= len(w.members) {
		return
	}
	m := w.members[p.Slot]
	if m == nil || m.key != p.Key || w.seen[p.Slot] != r.n {
		return
	}
	if !o.Err && o.LogStartOffset >= 0 {
		w.lsos[p.Slot] = o.LogStartOffset
	}
	w.move(m, o.Next, !o.Err && o.HighWatermark >= 0 && o.Next == o.HighWatermark)
}

// LogStarts is, for each partition of ps, its log start offset as last
// read when queues names it (see MatchAll), -1 where unknown: what a
// sessionless answer reports of a quiet partition, whose high watermark is
// the offset it is watched at. The slice is the watch's, valid until the
// round's next call.
func (r *Round) LogStarts(ps []fetchsession.Partition, queues []string) []int64 {
	w := r.w
	w.mu.Lock()
	defer w.mu.Unlock()
	w.starts = grow(w.starts[:0], len(ps))
	out := w.starts
	for i := range ps {
		out[i] = -1
		if s := ps[i].Slot; queues[i] != "" && int(s) < len(w.lsos) && w.gens[s] == ps[i].SlotGen && w.members[s] != nil {
			out[i] = w.lsos[s]
		}
	}
	return out
}

// Assign gives ps, the partitions of a fetch from a client that names
// every partition it reads in every fetch (a sessionless client), the slots
// a session would (fetchsession.Partition.Slot, SlotGen): a partition
// keeps its slot while the client names it, and for Config.Keep after; one
// not named for longer is forgotten and its slot, with a new generation,
// goes to the next new one.
// ok is false when ps names a partition twice: the fetch then reads
// without the watch.
func (r *Round) Assign(ps []fetchsession.Partition) (ok bool) {
	w := r.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.keys == nil {
		w.keys = make(map[fetchsession.Key]int32, len(ps))
	}
	named := 0
	for i := range ps {
		p := &ps[i]
		s, known := w.keys[p.Key]
		if !known {
			s, _ = w.keySlots.Take()
			if n := w.keySlots.Len(); n > len(w.keyNamed) {
				w.keyNamed, w.keyAt = grow(w.keyNamed, n), grow(w.keyAt, n)
			}
			w.keys[p.Key] = s
		}
		if w.keyNamed[s] == r.n {
			return false
		}
		w.keyNamed[s], w.keyAt[s] = r.n, r.at
		named++
		p.Slot, p.SlotGen = s, w.keySlots.Gen(s)
	}
	if named != len(w.keys) {
		for k, s := range w.keys {
			if w.keyNamed[s] != r.n && time.Duration(r.at-w.keyAt[s]) > w.cfg.Keep {
				delete(w.keys, k)
				w.keySlots.Release(s)
			}
		}
	}
	return true
}

// Park parks a call for every group whose partitions are all cold and not
// parked yet, first dropping the partitions this round did not name and
// placing the new ones. ok is false when the node's bound refused a call:
// some cold partitions are then not watched (Unparked names them).
func (r *Round) Park() (ok bool) {
	w := r.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed() {
		return false
	}
	w.sweep(r)
	ok = true
	for _, g := range w.groups {
		if g.call != nil || g.failed == r.n || len(g.members) == 0 {
			continue
		}
		if w.parkable(g) {
			ok = w.park(g) && ok
		}
	}
	return ok
}

// Unparked are the partitions of the round that are cold but on which no
// call is parked (Park was refused a call for them), in the fetch's order,
// as Hits without a Result.
func (r *Round) Unparked() []Hit {
	w := r.w
	w.mu.Lock()
	defer w.mu.Unlock()
	var ms []*member
	for _, g := range w.groups {
		if g.call != nil {
			continue
		}
		for _, m := range g.members {
			if w.seen[m.slot] == r.n && m.cold && m.res == nil && m.entry.Offset == w.wants[m.slot] {
				ms = append(ms, m)
			}
		}
	}
	w.byIdx(ms)
	hs := make([]Hit, len(ms))
	for i, m := range ms {
		hs[i] = Hit{Idx: int(w.idxs[m.slot]), Entry: m.entry}
	}
	return hs
}

// Wait waits until a parked call of the round's partitions answers, ctx
// ends or deadline passes, and returns what the calls that answered read
// of this round's partitions. failed reports that a call failed: its
// partitions are no longer watched, and the fetch should answer now (the
// next one reads them, and meets the failure as an answer).
func (r *Round) Wait(ctx context.Context, deadline time.Time) (hits []Hit, failed bool) {
	w := r.w
	var timer *time.Timer
	for {
		w.mu.Lock()
		hits, failed = w.collect(r.n)
		parked := slices.ContainsFunc(w.groups, func(g *group) bool { return g.call != nil })
		w.mu.Unlock()
		if len(hits) > 0 || failed || !parked {
			return hits, failed
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, false
		}
		if timer == nil {
			timer = time.NewTimer(left)
			defer timer.Stop()
		}
		select {
		case <-w.changed:
		case <-timer.C:
			return nil, false
		case <-ctx.Done():
			return nil, false
		case <-w.ctx.Done():
			return nil, false
		}
	}
}

// collect takes, from the groups whose calls ended, the answers for round
// n's partitions, and reports whether one of them failed in round n.
func (w *Watch) collect(n uint64) (hits []Hit, failed bool) {
	for _, g := range w.done {
		failed = failed || g.failed == n
		for _, m := range g.members {
			if m.res != nil && w.seen[m.slot] == n && m.resFrom == w.wants[m.slot] {
				e := m.entry
				e.Offset = m.resFrom
				hits = append(hits, Hit{Idx: int(w.idxs[m.slot]), Entry: e, Result: m.res})
				m.res = nil
				w.sync(m)
			}
		}
	}
	clear(w.done)
	w.done = w.done[:0]
	slices.SortFunc(hits, func(a, b Hit) int { return cmp.Compare(a.Idx, b.Idx) })
	return hits, failed
}

// sweep drops the members no round has named for Config.Keep, places the
// new ones, and regroups every member when groups have fragmented (w.mu
// held). It runs once a round.
func (w *Watch) sweep(r *Round) {
	n := r.n
	if w.swept == n {
		return
	}
	w.swept = n
	if w.live != w.named {
		var gone []*member
		for _, m := range w.members {
			if m != nil && w.seen[m.slot] != n && time.Duration(r.at-w.at[m.slot]) > w.cfg.Keep {
				gone = append(gone, m)
			}
		}
		w.drop(gone)
	}
	want := (w.live + w.cfg.Group - 1) / w.cfg.Group
	if len(w.groups) > want+2 {
		// Partitions come and go in groups of their own: start over, one
		// cancelled call per group, rather than park ever more calls.
		for _, g := range w.groups {
			w.stop(g)
		}
		w.groups = w.groups[:0]
		w.loose = w.loose[:0]
		for _, m := range w.members {
			if m != nil {
				m.g = nil
				w.loose = append(w.loose, m)
			}
		}
	}
	loose := slices.DeleteFunc(w.loose, func(m *member) bool { return m.g != nil || !w.holds(m) })
	w.loose = loose[:0]
	if len(loose) == 0 {
		return
	}
	w.byIdx(loose)
	var last *group
	if len(w.groups) > 0 {
		last = w.groups[len(w.groups)-1]
	}
	for _, m := range loose {
		if last == nil || last.call != nil || len(last.members) >= w.cfg.Group {
			last = &group{}
			w.groups = append(w.groups, last)
		}
		m.g = last
		last.members = append(last.members, m)
	}
	clear(loose)
}

// drop forgets ms (w.mu held). A call parked with one of them goes on for
// the others; its answer for the dropped ones is ignored.
func (w *Watch) drop(ms []*member) {
	var touched []*group
	for _, m := range ms {
		if w.holds(m) {
			w.members[m.slot], w.quiet[m.slot] = nil, -1
			w.live--
		}
		if m.g != nil && !slices.Contains(touched, m.g) {
			touched = append(touched, m.g)
		}
		m.g = nil
	}
	for _, g := range touched {
		g.members = slices.DeleteFunc(g.members, func(m *member) bool { return m.g != g })
		if len(g.members) == 0 {
			w.stop(g)
			w.groups = slices.DeleteFunc(w.groups, func(o *group) bool { return o == g })
		}
	}
}

// byIdx sorts ms in the order of the last fetch that named them.
func (w *Watch) byIdx(ms []*member) {
	slices.SortFunc(ms, func(a, b *member) int { return cmp.Compare(w.idxs[a.slot], w.idxs[b.slot]) })
}

// holds reports that m is the watch's member in its slot (w.mu held).
func (w *Watch) holds(m *member) bool {
	return int(m.slot) < len(w.members) && w.members[m.slot] == m
}

// stop cancels g's call, if one is parked (w.mu held).
func (w *Watch) stop(g *group) {
	if g.call != nil {
		g.call.cancel()
		w.setCall(g, nil)
	}
}

// park starts g's call (w.mu held); false when the node's bound refused it.
func (w *Watch) park(g *group) bool {
	ms := slices.DeleteFunc(slices.Clone(g.members), func(m *member) bool { return !m.cold })
	if len(ms) == 0 || !w.cfg.Calls.take(w.cfg.Owner) {
		return false
	}
	w.byIdx(ms)
	per := max(w.cfg.CallBytes/len(ms), 1)
	es := make([]queen.FetchEntry, len(ms))
	for i, m := range ms {
		es[i] = m.entry
		es[i].MaxBytes = per
	}
	ctx, cancel := context.WithCancel(w.ctx)
	c := &call{cancel: cancel, members: ms, entries: es}
	for _, m := range ms {
		m.call = c
	}
	w.setCall(g, c)
	go w.run(ctx, g, c)
	return true
}

// parkable reports that g can be parked (w.mu held): one of its partitions
// is cold, and every one the last round named is. One no round names now (kept for Config.Keep)
// does not hold the others back; the call leaves it out unless it is cold.
func (w *Watch) parkable(g *group) bool {
	return slices.ContainsFunc(g.members, func(m *member) bool { return m.cold }) &&
		!slices.ContainsFunc(g.members, func(m *member) bool { return !m.cold && w.seen[m.slot] == w.round })
}

// run is one parked call, asked again while it answers nothing and the
// session is fetched. A call that read records up to a partition's high
// watermark parks again at once, there, while the records wait for the
// next fetch: the group's other partitions are never left unwatched
// between fetches.
func (w *Watch) run(ctx context.Context, g *group, c *call) {
	defer w.cfg.Calls.give(w.cfg.Owner)
	defer c.cancel()
	req := queen.FetchRequest{Entries: c.entries, MaxWaitMs: int(w.cfg.Wait / time.Millisecond), MinBytes: 1}
	for {
		rs, err := w.reader.Fetch(ctx, req)
		w.mu.Lock()
		if g.call != c {
			w.mu.Unlock() // stopped: nobody waits for this answer
			return
		}
		if err == nil && len(rs) != len(c.entries) {
			err = errMisaligned
		}
		if err != nil {
			// Its partitions are read by the next fetch, which meets the
			// failure as an answer with its Kafka code.
			g.failed = w.round
			for _, m := range g.members {
				m.cold = false
			}
			w.setCall(g, nil)
			w.ended(g)
			w.mu.Unlock()
			return
		}
		now := w.cfg.Now()
		news := false
		for i, m := range c.members {
			asked := c.entries[i].Offset
			if m.g != g || !w.holds(m) || m.entry.Offset != asked {
				continue // dropped or moved since the call was parked
			}
			res := &rs[i]
			if len(res.Records) == 0 && res.Error == "" && res.HighWatermark == asked {
				continue
			}
			news = true
			if res.Error == "" {
				w.lsos[m.slot] = res.LogStartOffset
			}
			m.res, m.resFrom, m.at = res, asked, now
			if n := len(res.Records); n > 0 && res.Error == "" && res.Records[n-1].Offset+1 == res.HighWatermark {
				m.entry.Offset = res.HighWatermark // cold where the client asks next
			} else {
				m.cold = false
			}
			w.sync(m)
		}
		if news {
			w.ended(g)
		}
		inUse := ctx.Err() == nil && now.Sub(w.used) < w.cfg.Wait
		if !news && inUse {
			w.mu.Unlock()
			continue // the wait ran out: park again
		}
		w.setCall(g, nil)
		if inUse && w.parkable(g) {
			w.park(g) // a refused park leaves it to the next fetch
		}
		w.mu.Unlock()
		return
	}
}

// ended records that g's call ended and wakes a waiting round (w.mu held).
func (w *Watch) ended(g *group) {
	if !slices.Contains(w.done, g) {
		w.done = append(w.done, g)
	}
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

type watchError string

func (e watchError) Error() string { return string(e) }

const errMisaligned = watchError("fetchwatch: a parked call's answer does not match its entries")
