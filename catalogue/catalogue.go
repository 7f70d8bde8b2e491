package catalogue

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/queen-mq/queen-kafka/internal/groupreg"
	"github.com/queen-mq/queen-kafka/internal/idlesweep"
	"github.com/queen-mq/queen-kafka/queen"
)

// TTL is how stale the queue list may be: a queue created natively
// shows up to Kafka clients within about this long.
const TTL = 3 * time.Second

// staleRefreshWait bounds how long an unforced caller holding a stale
// listing waits for its refresh, counted from the refresh's start: past
// it the stale listing answers and the refresh finishes in the background
// (stale-while-revalidate). A Queen whose KV hangs (a black hole) then
// costs Metadata and the data path at most this once per refresh, not the
// Queen client's whole budget on every request (issue 11, item 7).
const staleRefreshWait = 250 * time.Millisecond

// A refresh that failed is not retried before a backoff that doubles from
// RefreshBackoffMin to RefreshBackoffMax (at least a 429's Retry-After),
// and restarts on success: through a Queen outage every request would
// otherwise list the queues again, about 60 listings a second for one
// producer (issue 20, item 13). Callers meanwhile get the failure, which
// they answer as they answer any failed refresh.
const (
	RefreshBackoffMin = 100 * time.Millisecond
	RefreshBackoffMax = 5 * time.Second
	backoffAfter      = 2 // failed listings in a row that start the backoff
)

// Catalogue ceilings of the operator page.
const (
	MaxWidth            = 100_000 // partitions per topic; QUEEN_KAFKA_DEFAULT_PARTITIONS' range too
	MaxListedPartitions = 200_000 // in one all-topics listing
	topicCfgPageLimit   = 1000    // getPrefix page (§7.1 clamp)
	topicCfgMaxPages    = 1000    // a million records, then refuse
)

// Record is the qk:topiccfg:<topic> record (queen-api §10): the bag the
// facade last posted to configure, the width the topic declared, and the
// Kafka-side configs it was given.
type Record struct {
	QID        *string           `json:"qid"`
	Set        map[string]any    `json:"set"`
	At         int64             `json:"at"`
	Partitions int32             `json:"partitions,omitempty"`
	Kafka      map[string]string `json:"kafka,omitempty"`
}

// Topic is what the catalogue knows of one topic.
type Topic struct {
	queue queen.QueueInfo
	cfg   *Record  // nil when the facade holds no matching record
	id    [16]byte // the topic id (ids.go); zero until listed
}

// Name is the topic's name, its queue's.
func (t Topic) Name() string { return t.queue.Name }

// QueueID is the live queue's id as listed: "" while unknown.
func (t Topic) QueueID() string { return t.queue.ID }

// ID is the topic id (ids.go): zero while no listing has named it.
func (t Topic) ID() [16]byte { return t.id }

// QID is the live queue's id as a record stores it: nil while unknown.
func (t Topic) QID() *string {
	if t.queue.ID == "" {
		return nil
	}
	id := t.queue.ID
	return &id
}

// Catalogue is one credential's view of its topics: the queue list and the
// topic records, refreshed together at most once per TTL and by at
// most one listing at a time.
type Catalogue struct {
	deps *Deps

	mu       sync.RWMutex
	topics   map[string]Topic
	byID     map[[16]byte]string // topics by id (ids.go)
	loadedAt time.Time           // zero: never loaded
	listedAt time.Time           // when the listing held began (Deps.Now)
	missAt   time.Time           // when a miss last refreshed (FindFresh)
	// running is the listing in flight; next, when set, is the one that
	// begins as soon as running ends, shared by every forced caller that
	// arrived while running was already under way.
	running, next *refreshCall
	// widest remembers the widest width advertised per live queue, so that
	// a topic never narrows (a narrower count re-hashes keys onto other
	// partitions). Keyed by name and queue id: a recreated queue starts over.
	widest map[queueKey]int32
	// local remembers what this process created or deleted, stamped with
	// a sequence number, so that a refresh whose listing was taken before
	// the change does not undo it when it lands.
	local map[string]localChange
	seq   uint64
	// failed is the last refresh's failure, nil after a success; no listing
	// begins before failedAt+backoff (RefreshBackoffMin).
	failed   error
	failedAt time.Time
	backoff  time.Duration
	fails    int // failed listings in a row

	used time.Time // its last use, kept for a credential's (Catalogues.mu)
}

// queueKey names one queue: a name, and the id of the queue that holds it.
type queueKey struct{ name, id string }

type localChange struct {
	seq     uint64
	present bool
	info    Topic
}

// refreshCall is one listing and everyone waiting for it. q and ctx are
// the ones of the caller that asked for it first.
type refreshCall struct {
	done    chan struct{}
	err     error
	q       Queen
	ctx     context.Context
	started time.Time // wall clock, for staleRefreshWait
}

// Deps is what the catalogues take from the node that serves them,
// given in New, so that they hold no node. Every catalogue shares its
// Catalogues' one copy: a test substituting the clock (SetClock) reaches
// the catalogues already filed too.
type Deps struct {
	DefaultPartitions int32            // QUEEN_KAFKA_DEFAULT_PARTITIONS: the width floor of a topic that declared none
	Now               func() time.Time // the TTL's clock; tests substitute it
	Queen             Queen            // the node's own credential, read with for a Caller without one
	Clustered         bool             // cluster mode: a miss refreshes at once (cluster.go)
	// Transient reports whether an identity comes and goes with its
	// credential (one standing for itself, naming no tenant): only such
	// an identity's catalogue is dropped when idle. Nil: none is.
	Transient func(identity string) bool
}

// Caller is who asks the catalogue: the identity its catalogue is filed
// under ("" the node's own) and the Queen client its listings are read
// with (nil: the node's own, Deps.Queen). It is a value, never a
// connection: the catalogue needs nothing else of one.
type Caller struct {
	Identity string
	Queen    *queen.Client
}

// Queen is the Queen a catalogue reads: the queue list and the
// topic records. *queen.Client is it.
type Queen interface {
	Queues(ctx context.Context) ([]queen.QueueInfo, error)
	KV(ctx context.Context, ops []queen.KVOp) ([]queen.KVResult, error)
}

// Catalogues files catalogues by caller identity, so that two tenants on
// one SASL listener never see each other's topics.
type Catalogues struct {
	deps  *Deps
	mu    sync.Mutex
	m     map[string]*Catalogue
	sweep idlesweep.Sweep
}

// New files no catalogue yet: each identity's is made on its first use.
func New(deps Deps) *Catalogues {
	if deps.Transient == nil {
		deps.Transient = func(string) bool { return false }
	}
	return &Catalogues{deps: &deps, m: make(map[string]*Catalogue)}
}

// SetClock substitutes the TTL's clock, for the catalogues filed and to
// come (tests).
func (cs *Catalogues) SetClock(now func() time.Time) { cs.deps.Now = now }

// Filed is the identities a catalogue is filed under, sorted.
func (cs *Catalogues) Filed() []string {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	ids := make([]string, 0, len(cs.m))
	for id := range cs.m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Forget drops every catalogue: each identity's next request lists afresh.
func (cs *Catalogues) Forget() {
	cs.mu.Lock()
	clear(cs.m)
	cs.mu.Unlock()
}

// idleCredentialCatalog is how long the catalogue of an identity that is a
// credential standing for itself (Deps.Transient, a token naming no tenant) is
// kept unused: such identities come and go with their tokens (a JWT
// broker rotates them), and each would otherwise keep a whole topic list
// for the life of the process. A tenant's, or the one of a listener
// without SASL, is kept: there are as many as tenants, and its widest
// widths must outlive a quiet spell.
const idleCredentialCatalog = 30 * time.Minute

// For is the catalogue of c's identity, made on its first use.
func (cs *Catalogues) For(c Caller) *Catalogue {
	id := c.Identity
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cat := cs.m[id]
	// Only a credential's catalogue is ever dropped, so only it reads the
	// clock on this path (every produce and fetch passes here).
	if cat != nil && !cs.deps.Transient(id) {
		return cat
	}
	now := cs.deps.Now()
	if cat == nil {
		idlesweep.Run(&cs.sweep, now, cs.m, func(id string, cat *Catalogue) bool {
			return cs.deps.Transient(id) && now.Sub(cat.used) > idleCredentialCatalog
		})
		cat = &Catalogue{deps: cs.deps, widest: make(map[queueKey]int32)}
		cs.m[id] = cat
	}
	cat.used = now
	return cat
}

// TopicWidth is the partition count a Kafka client is told for topic, and
// whether the topic exists. It is the hot-path entry for Produce, Fetch and
// ListOffsets: answered from the cached catalogue, refreshed when older than
// TTL. When a refresh fails but an older listing exists, that listing
// answers (a Queen blip does not unknow every topic); with none, the Queen
// error is returned for the caller to map.
func (cs *Catalogues) TopicWidth(ctx context.Context, c Caller, topic string) (width int32, exists bool, err error) {
	return cs.topicWidth(ctx, c, topic, false)
}

// topicWidth is TopicWidth; fresh looks a miss up again with FindFresh.
func (cs *Catalogues) topicWidth(ctx context.Context, c Caller, topic string, fresh bool) (width int32, exists bool, err error) {
	_, width, exists, err = cs.find(ctx, c, topic, fresh)
	return width, exists, err
}

// find is topic's id and width for c; fresh looks a miss up again with
// FindFresh.
func (cs *Catalogues) find(ctx context.Context, c Caller, topic string, fresh bool) (id [16]byte, width int32, exists bool, err error) {
	cat := cs.For(c)
	asked := cs.deps.Now()
	if err := cat.Ensure(ctx, c, false); err != nil && !cat.Loaded() {
		return id, 0, false, err
	}
	var t Topic
	var ok bool
	if fresh {
		t, ok = cat.FindFresh(ctx, c, topic, asked)
	} else {
		t, ok = cat.Find(ctx, c, topic)
	}
	if !ok {
		return id, 0, false, nil
	}
	return t.ID(), cat.Width(t), true, nil
}

// Topics is c's view of the catalogue as another package asks it which
// partitions exist (the coordinator's commits: coordinator.Topics): a
// topic Metadata would not name, or a partition past its width, is not
// served. A topic it does not hold is looked up again after a listing
// (FindFresh): a commit names a topic the client may have learned of
// elsewhere.
func (cs *Catalogues) Topics(c Caller) ServedTopics { return ServedTopics{cs, c} }

// ServedTopics is Topics' answer.
type ServedTopics struct {
	cats *Catalogues
	c    Caller
}

// Width is TopicWidth for the caller, a miss looked up again (FindFresh).
func (t ServedTopics) Width(ctx context.Context, topic string) (int32, bool, error) {
	return t.cats.topicWidth(ctx, t.c, topic, true)
}

// Served is topic's id and width as Width answers them (a miss looked up
// again): the share-group offsets APIs name topics by both.
func (t ServedTopics) Served(ctx context.Context, topic string) (id [16]byte, width int32, exists bool, err error) {
	return t.cats.find(ctx, t.c, topic, true)
}

// All is every topic the caller may name with its id and advertised width,
// as a group's subscription sees them (groupreg.Topics).
func (t ServedTopics) All(ctx context.Context) ([]groupreg.Topic, error) {
	cat := t.cats.For(t.c)
	if err := cat.Ensure(ctx, t.c, false); err != nil && !cat.Loaded() {
		return nil, err
	}
	var out []groupreg.Topic
	for _, tp := range cat.List() {
		if Addressable(tp.Name()) && tp.ID() != ([16]byte{}) {
			out = append(out, groupreg.Topic{Name: tp.Name(), ID: tp.ID(), Partitions: cat.Width(tp)})
		}
	}
	return out, nil
}

// ResolveID is ResolveID for the caller (coordinator.TopicIDs).
func (t ServedTopics) ResolveID(ctx context.Context, id [16]byte) (string, bool, error) {
	name, _, ok, err := t.cats.ResolveID(ctx, t.c, id)
	return name, ok, err
}

// IDOf is topic's id for the caller, from the catalogue as listed now (a
// failed read names what it holds).
func (t ServedTopics) IDOf(ctx context.Context, topic string) ([16]byte, bool) {
	cat := t.cats.For(t.c)
	_ = cat.Ensure(ctx, t.c, false)
	return cat.TopicID(topic)
}

// cachedTopicConfig is topic's Kafka configs as the catalogue holds them:
// its record as of the last listing (every TTL, on every node, from
// Queen KV), or as altered through this node since. An alter through
// another node therefore applies here within TTL.
func (cs *Catalogues) cachedTopicConfig(c Caller, topic string) TopicConfig {
	t, _ := cs.For(c).Lookup(topic)
	return TopicConfigOf(t.cfg)
}

// Loaded reports whether any listing ever landed.
func (cat *Catalogue) Loaded() bool {
	cat.mu.RLock()
	defer cat.mu.RUnlock()
	return !cat.loadedAt.IsZero()
}

// Lookup is topic as the catalogue holds it, with no refresh.
func (cat *Catalogue) Lookup(topic string) (Topic, bool) {
	cat.mu.RLock()
	defer cat.mu.RUnlock()
	t, ok := cat.topics[topic]
	return t, ok
}

// List returns every topic, sorted by name.
func (cat *Catalogue) List() []Topic {
	cat.mu.RLock()
	out := make([]Topic, 0, len(cat.topics))
	for _, t := range cat.topics {
		out = append(out, t)
	}
	cat.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].queue.Name < out[j].queue.Name })
	return out
}

// Width is max(live partitions, declared floor or the default), never below
// what was advertised before for this queue, clamped at 100,000.
func (cat *Catalogue) Width(t Topic) int32 {
	floor := cat.deps.DefaultPartitions
	if t.cfg != nil && t.cfg.Partitions > 0 {
		floor = t.cfg.Partitions
	}
	w := floor
	if live := t.queue.Partitions; live > int(w) {
		w = int32(min(live, MaxWidth))
	}
	w = min(w, MaxWidth)
	key := queueKey{t.queue.Name, t.queue.ID}
	cat.mu.Lock()
	if prev := cat.widest[key]; prev > w {
		w = prev
	} else {
		cat.widest[key] = w
	}
	cat.mu.Unlock()
	return w
}

// Ensure refreshes the catalogue when it is older than TTL, or always
// when force (before an auto-create, so that a queue is never configured
// twice on stale knowledge; in cluster mode on a miss, since another node
// may have just created the topic). Callers share listings: an unforced one
// joins the listing in flight; a forced one never settles for a listing
// that began before it asked, and joins the one queued behind it instead.
// So a burst of forced callers costs Queen two listings, not one each. The
// listing runs on its own, bounded by the Queen client's budget, so that
// every caller stops waiting at its own deadline while the others still get
// the answer. An unforced caller that already holds a listing waits for
// the refresh only until staleRefreshWait after it began, and is then
// answered from what it holds (nil). Within the backoff of a failed
// refresh, forced or not, no listing begins: the failure answers.
func (cat *Catalogue) Ensure(ctx context.Context, c Caller, force bool) error {
	cat.mu.Lock()
	now := cat.deps.Now()
	if !force && !cat.loadedAt.IsZero() && now.Sub(cat.loadedAt) < TTL {
		cat.mu.Unlock()
		return nil
	}
	if err := cat.failed; err != nil && cat.running == nil && now.Sub(cat.failedAt) < cat.backoff {
		cat.mu.Unlock()
		return err
	}
	stale := !force && !cat.loadedAt.IsZero()
	var call *refreshCall
	switch {
	case !force && cat.running != nil:
		call = cat.running
	case cat.next != nil:
		call = cat.next
	default:
		call = &refreshCall{done: make(chan struct{}), q: cat.queenFor(c), ctx: context.WithoutCancel(ctx)}
		if cat.running != nil {
			cat.next = call
		} else {
			call.started = time.Now()
			cat.running = call
			go cat.run(call)
		}
	}
	cat.mu.Unlock()
	var bound <-chan time.Time
	if stale {
		t := time.NewTimer(time.Until(call.started.Add(staleRefreshWait)))
		defer t.Stop()
		bound = t.C
	}
	select {
	case <-call.done:
		return call.err
	case <-bound:
		return nil // the stale listing answers; the refresh goes on
	case <-ctx.Done():
		return ctx.Err()
	}
}

// queenFor is the client the catalogue reads Queen with for c: the
// caller's credential, or the node's own when it carries none.
func (cat *Catalogue) queenFor(c Caller) Queen {
	if c.Queen == nil {
		return cat.deps.Queen
	}
	return c.Queen
}

// run performs call's listing, then the one queued behind it, if any. A
// failed listing starts or doubles the backoff, and the one queued behind
// it is answered its failure rather than begun.
func (cat *Catalogue) run(call *refreshCall) {
	for call != nil {
		call.err = cat.refresh(call.ctx, call.q)
		cat.mu.Lock()
		next := cat.next
		cat.next = nil
		cat.noteOutcome(call.err)
		if next != nil && cat.failed != nil { // in the backoff noteOutcome just started or kept
			next.err = call.err
			close(next.done)
			next = nil
		}
		cat.running = next
		if next != nil {
			next.started = time.Now()
		}
		cat.mu.Unlock()
		close(call.done)
		call = next
	}
}

// noteOutcome keeps a listing's outcome for the backoff; the caller holds
// mu. A lone failure starts none: a blip (one refused or dropped call)
// costs its own request only, and the next request lists again at once;
// the backoff begins with the second failure in a row, which is an outage.
func (cat *Catalogue) noteOutcome(err error) {
	if err == nil {
		cat.failed, cat.backoff, cat.fails = nil, 0, 0
		return
	}
	if cat.fails++; cat.fails < backoffAfter {
		return
	}
	cat.failed, cat.failedAt = err, cat.deps.Now()
	cat.backoff = min(max(2*cat.backoff, RefreshBackoffMin), RefreshBackoffMax)
	if ra, ok := queen.RetryAfter(err); ok {
		cat.backoff = max(cat.backoff, min(ra, RefreshBackoffMax))
	}
}

func (cat *Catalogue) refresh(ctx context.Context, q Queen) error {
	cat.mu.Lock()
	startSeq := cat.seq
	cat.mu.Unlock()
	began := cat.deps.Now()
	queues, err := q.Queues(ctx)
	if err != nil {
		return fmt.Errorf("list queues: %w", err)
	}
	cfgs, err := loadTopicCfgs(ctx, q)
	if err != nil {
		return err
	}
	topics := make(map[string]Topic, len(queues))
	for _, qi := range queues {
		t := Topic{queue: qi, id: queueTopicID(qi)}
		if cfg, ok := cfgs[qi.Name]; ok && cfg.Matches(qi.ID) {
			t.cfg = cfg
		}
		topics[qi.Name] = t
	}
	cat.mu.Lock()
	defer cat.mu.Unlock()
	for name, ch := range cat.local {
		switch {
		case ch.seq <= startSeq:
			delete(cat.local, name) // the listing already reflects it
		case ch.present:
			if _, ok := topics[name]; !ok {
				topics[name] = ch.info
			}
		default:
			delete(topics, name)
		}
	}
	cat.topics = topics
	cat.indexIDs()
	cat.loadedAt, cat.listedAt = cat.deps.Now(), began
	for key := range cat.widest { // forget queues that are gone
		if t, ok := topics[key.name]; !ok || (t.queue.ID != key.id && key.id != "") {
			delete(cat.widest, key)
		}
	}
	return nil
}

// Matches reports whether a record belongs to the live queue with id. A
// record written before its queue existed carries a null qid and is taken
// as the queue's; one carrying another queue's id is a leftover of a queue
// deleted and recreated outside the facade.
func (cfg *Record) Matches(liveID string) bool {
	return cfg.QID == nil || liveID == "" || *cfg.QID == liveID
}

// loadTopicCfgs reads every qk:topiccfg: record, page by page. A page cut
// short by the read budget resumes after its last row; an unreadable record
// is treated as absent (§12).
func loadTopicCfgs(ctx context.Context, q Queen) (map[string]*Record, error) {
	out := make(map[string]*Record)
	after := ""
	for page := 0; ; page++ {
		if page == topicCfgMaxPages {
			return nil, fmt.Errorf("read topic records: more than %d pages", topicCfgMaxPages)
		}
		res, err := q.KV(ctx, []queen.KVOp{{Op: queen.OpGetPrefix, NS: queen.Namespace, Prefix: queen.PrefixTopicCfg, Limit: topicCfgPageLimit, After: after}})
		if err != nil {
			return nil, fmt.Errorf("read topic records: %w", err)
		}
		r := res[0]
		for _, row := range r.Rows {
			if cfg := decodeTopicCfg(row.Value); cfg != nil {
				out[topicOfCfgKey(row.Key)] = cfg
			}
		}
		if !r.Truncated {
			return out, nil
		}
		switch {
		case len(r.Rows) > 0:
			after = r.Rows[len(r.Rows)-1].Key
		case r.NextAfter != nil && *r.NextAfter != after:
			after = *r.NextAfter
		default:
			return nil, fmt.Errorf("read topic records: truncated page with no cursor after %q", after)
		}
	}
}

// Added records a queue the facade just created, so that the next request
// sees it before the next refresh does.
func (cat *Catalogue) Added(name string, cfg *Record) {
	cat.mu.Lock()
	defer cat.mu.Unlock()
	if cat.topics == nil {
		cat.topics = make(map[string]Topic)
	}
	t, ok := cat.topics[name]
	if !ok {
		t = Topic{queue: queen.QueueInfo{Name: name}, cfg: cfg}
		cat.topics[name] = t
	}
	cat.note(name, true, t)
}

// Removed forgets a queue the facade just deleted.
func (cat *Catalogue) Removed(name string) {
	cat.mu.Lock()
	defer cat.mu.Unlock()
	if t, ok := cat.topics[name]; ok {
		delete(cat.byID, t.id)
	}
	delete(cat.topics, name)
	for key := range cat.widest {
		if key.name == name {
			delete(cat.widest, key)
		}
	}
	cat.note(name, false, Topic{})
}

// note stamps a local change; the caller holds mu.
func (cat *Catalogue) note(name string, present bool, t Topic) {
	if cat.local == nil {
		cat.local = make(map[string]localChange)
	}
	cat.seq++
	cat.local[name] = localChange{seq: cat.seq, present: present, info: t}
}

// SetRecord replaces the record the catalogue holds for an existing topic.
func (cat *Catalogue) SetRecord(name string, cfg *Record) {
	cat.mu.Lock()
	defer cat.mu.Unlock()
	if t, ok := cat.topics[name]; ok {
		t.cfg = cfg
		cat.topics[name] = t
	}
}
