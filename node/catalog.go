package node

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/queen-mq/queen-kafka/internal/idlesweep"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/transport"
)

// catalogTTL is how stale the queue list may be: a queue created natively
// shows up to Kafka clients within about this long.
const catalogTTL = 3 * time.Second

// staleRefreshWait bounds how long an unforced caller holding a stale
// listing waits for its refresh, counted from the refresh's start: past
// it the stale listing answers and the refresh finishes in the background
// (stale-while-revalidate). A Queen whose KV hangs (a black hole) then
// costs Metadata and the data path at most this once per refresh, not the
// Queen client's whole budget on every request (issue 11, item 7).
const staleRefreshWait = 250 * time.Millisecond

// Catalogue ceilings of the operator page.
const (
	maxAdvertisedWidth  = 100_000 // partitions per topic; QUEEN_KAFKA_DEFAULT_PARTITIONS' range too
	maxListedPartitions = 200_000 // in one all-topics listing
	topicCfgPageLimit   = 1000    // getPrefix page (§7.1 clamp)
	topicCfgMaxPages    = 1000    // a million records, then refuse
)

// topicCfg is the qk:topiccfg:<topic> record (queen-api §10): the bag the
// facade last posted to configure, the width the topic declared, and the
// Kafka-side configs it was given.
type topicCfg struct {
	QID        *string           `json:"qid"`
	Set        map[string]any    `json:"set"`
	At         int64             `json:"at"`
	Partitions int32             `json:"partitions,omitempty"`
	Kafka      map[string]string `json:"kafka,omitempty"`
}

// topicInfo is what the catalogue knows of one topic.
type topicInfo struct {
	queue queen.QueueInfo
	cfg   *topicCfg // nil when the facade holds no matching record
	id    [16]byte  // the topic id (topic_ids.go); zero until listed
}

// qid is the live queue's id as a record stores it: nil while unknown.
func (t topicInfo) qid() *string {
	if t.queue.ID == "" {
		return nil
	}
	id := t.queue.ID
	return &id
}

// catalog is one credential's view of its topics: the queue list and the
// topic records, refreshed together at most once per catalogTTL and by at
// most one listing at a time.
type catalog struct {
	deps *catalogDeps

	mu       sync.RWMutex
	topics   map[string]topicInfo
	byID     map[[16]byte]string // topics by id (topic_ids.go)
	loadedAt time.Time           // zero: never loaded
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

	used time.Time // its last use, kept for a credential's (catalogs.mu)
}

// queueKey names one queue: a name, and the id of the queue that holds it.
type queueKey struct{ name, id string }

type localChange struct {
	seq     uint64
	present bool
	info    topicInfo
}

// refreshCall is one listing and everyone waiting for it. q and ctx are
// the ones of the caller that asked for it first.
type refreshCall struct {
	done    chan struct{}
	err     error
	q       catalogQueen
	ctx     context.Context
	started time.Time // wall clock, for staleRefreshWait
}

// catalogDeps is what the catalogues take from the node that serves them,
// given in New, so that they hold no *Node. Every catalogue shares its
// catalogs' one copy: a test substituting the clock (withClock) reaches
// the catalogues already filed too.
type catalogDeps struct {
	defaultPartitions int32            // QUEEN_KAFKA_DEFAULT_PARTITIONS: the width floor of a topic that declared none
	now               func() time.Time // the TTL's clock; tests substitute it
	queen             catalogQueen     // the node's own credential, read with when there is no connection
	clustered         bool             // cluster mode: a miss refreshes at once (cluster_catalog.go)
}

// catalogQueen is the Queen a catalogue reads: the queue list and the
// topic records. *queen.Client is it.
type catalogQueen interface {
	Queues(ctx context.Context) ([]queen.QueueInfo, error)
	KV(ctx context.Context, ops []queen.KVOp) ([]queen.KVResult, error)
}

// catalogs files catalogues by connection identity, so that two tenants on
// one SASL listener never see each other's topics.
type catalogs struct {
	deps  *catalogDeps
	mu    sync.Mutex
	m     map[string]*catalog
	sweep idlesweep.Sweep
}

func newCatalogs(deps catalogDeps) *catalogs {
	return &catalogs{deps: &deps, m: make(map[string]*catalog)}
}

// idleCredentialCatalog is how long the catalogue of an identity that is a
// credential standing for itself ("cred:", a token naming no tenant) is
// kept unused: such identities come and go with their tokens (a JWT
// broker rotates them), and each would otherwise keep a whole topic list
// for the life of the process. A tenant's, or the one of a listener
// without SASL, is kept: there are as many as tenants, and its widest
// widths must outlive a quiet spell.
const idleCredentialCatalog = 30 * time.Minute

func (cs *catalogs) forConn(c *transport.Conn) *catalog {
	id := ""
	if c != nil {
		id = c.Identity()
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cat := cs.m[id]
	// Only a credential's catalogue is ever dropped, so only it reads the
	// clock on this path (every produce and fetch passes here).
	if cat != nil && !strings.HasPrefix(id, credentialIdentity) {
		return cat
	}
	now := cs.deps.now()
	if cat == nil {
		idlesweep.Run(&cs.sweep, now, cs.m, func(id string, cat *catalog) bool {
			return strings.HasPrefix(id, credentialIdentity) && now.Sub(cat.used) > idleCredentialCatalog
		})
		cat = &catalog{deps: cs.deps, widest: make(map[queueKey]int32)}
		cs.m[id] = cat
	}
	cat.used = now
	return cat
}

// topicWidth is the partition count a Kafka client is told for topic, and
// whether the topic exists. It is the hot-path entry for Produce, Fetch and
// ListOffsets: answered from the cached catalogue, refreshed when older than
// catalogTTL. When a refresh fails but an older listing exists, that listing
// answers (a Queen blip does not unknow every topic); with none, the Queen
// error is returned for the caller to map.
func (cs *catalogs) topicWidth(ctx context.Context, c *transport.Conn, topic string) (width int32, exists bool, err error) {
	cat := cs.forConn(c)
	if err := cat.ensure(ctx, c, false); err != nil && !cat.loaded() {
		return 0, false, err
	}
	t, ok := cat.find(ctx, c, topic)
	if !ok {
		return 0, false, nil
	}
	return cat.width(t), true, nil
}

// cachedTopicConfig is topic's Kafka configs as the catalogue holds them:
// its record as of the last listing (every catalogTTL, on every node, from
// Queen KV), or as altered through this node since. An alter through
// another node therefore applies here within catalogTTL.
func (cs *catalogs) cachedTopicConfig(c *transport.Conn, topic string) kafkaTopicConfig {
	t, _ := cs.forConn(c).lookup(topic)
	return topicConfigOf(t.cfg)
}

func (cat *catalog) loaded() bool {
	cat.mu.RLock()
	defer cat.mu.RUnlock()
	return !cat.loadedAt.IsZero()
}

func (cat *catalog) lookup(topic string) (topicInfo, bool) {
	cat.mu.RLock()
	defer cat.mu.RUnlock()
	t, ok := cat.topics[topic]
	return t, ok
}

// list returns every topic, sorted by name.
func (cat *catalog) list() []topicInfo {
	cat.mu.RLock()
	out := make([]topicInfo, 0, len(cat.topics))
	for _, t := range cat.topics {
		out = append(out, t)
	}
	cat.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].queue.Name < out[j].queue.Name })
	return out
}

// width is max(live partitions, declared floor or the default), never below
// what was advertised before for this queue, clamped at 100,000.
func (cat *catalog) width(t topicInfo) int32 {
	floor := cat.deps.defaultPartitions
	if t.cfg != nil && t.cfg.Partitions > 0 {
		floor = t.cfg.Partitions
	}
	w := floor
	if live := t.queue.Partitions; live > int(w) {
		w = int32(min(live, maxAdvertisedWidth))
	}
	w = min(w, maxAdvertisedWidth)
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

// ensure refreshes the catalogue when it is older than catalogTTL, or always
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
// answered from what it holds (nil).
func (cat *catalog) ensure(ctx context.Context, c *transport.Conn, force bool) error {
	cat.mu.Lock()
	if !force && !cat.loadedAt.IsZero() && cat.deps.now().Sub(cat.loadedAt) < catalogTTL {
		cat.mu.Unlock()
		return nil
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
// connection's credential, or the node's own when there is no connection.
func (cat *catalog) queenFor(c *transport.Conn) catalogQueen {
	if c == nil {
		return cat.deps.queen
	}
	return c.Queen()
}

// run performs call's listing, then the one queued behind it, if any.
func (cat *catalog) run(call *refreshCall) {
	for call != nil {
		call.err = cat.refresh(call.ctx, call.q)
		cat.mu.Lock()
		next := cat.next
		cat.running, cat.next = next, nil
		if next != nil {
			next.started = time.Now()
		}
		cat.mu.Unlock()
		close(call.done)
		call = next
	}
}

func (cat *catalog) refresh(ctx context.Context, q catalogQueen) error {
	cat.mu.Lock()
	startSeq := cat.seq
	cat.mu.Unlock()
	queues, err := q.Queues(ctx)
	if err != nil {
		return fmt.Errorf("list queues: %w", err)
	}
	cfgs, err := loadTopicCfgs(ctx, q)
	if err != nil {
		return err
	}
	topics := make(map[string]topicInfo, len(queues))
	for _, qi := range queues {
		t := topicInfo{queue: qi, id: queueTopicID(qi)}
		if cfg, ok := cfgs[qi.Name]; ok && cfg.matches(qi.ID) {
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
	cat.loadedAt = cat.deps.now()
	for key := range cat.widest { // forget queues that are gone
		if t, ok := topics[key.name]; !ok || (t.queue.ID != key.id && key.id != "") {
			delete(cat.widest, key)
		}
	}
	return nil
}

// matches reports whether a record belongs to the live queue with id. A
// record written before its queue existed carries a null qid and is taken
// as the queue's; one carrying another queue's id is a leftover of a queue
// deleted and recreated outside the facade.
func (cfg *topicCfg) matches(liveID string) bool {
	return cfg.QID == nil || liveID == "" || *cfg.QID == liveID
}

// loadTopicCfgs reads every qk:topiccfg: record, page by page. A page cut
// short by the read budget resumes after its last row; an unreadable record
// is treated as absent (§12).
func loadTopicCfgs(ctx context.Context, q catalogQueen) (map[string]*topicCfg, error) {
	out := make(map[string]*topicCfg)
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

// added records a queue the facade just created, so that the next request
// sees it before the next refresh does.
func (cat *catalog) added(name string, cfg *topicCfg) {
	cat.mu.Lock()
	defer cat.mu.Unlock()
	if cat.topics == nil {
		cat.topics = make(map[string]topicInfo)
	}
	t, ok := cat.topics[name]
	if !ok {
		t = topicInfo{queue: queen.QueueInfo{Name: name}, cfg: cfg}
		cat.topics[name] = t
	}
	cat.note(name, true, t)
}

// removed forgets a queue the facade just deleted.
func (cat *catalog) removed(name string) {
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
	cat.note(name, false, topicInfo{})
}

// note stamps a local change; the caller holds mu.
func (cat *catalog) note(name string, present bool, t topicInfo) {
	if cat.local == nil {
		cat.local = make(map[string]localChange)
	}
	cat.seq++
	cat.local[name] = localChange{seq: cat.seq, present: present, info: t}
}

// setCfg replaces the record the catalogue holds for an existing topic.
func (cat *catalog) setCfg(name string, cfg *topicCfg) {
	cat.mu.Lock()
	defer cat.mu.Unlock()
	if t, ok := cat.topics[name]; ok {
		t.cfg = cfg
		cat.topics[name] = t
	}
}
