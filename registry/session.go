package registry

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/queen-mq/queen-kafka/hashring"
	"github.com/queen-mq/queen-kafka/internal/clock"
	"github.com/queen-mq/queen-kafka/queen"
)

// KV is the one Queen route the registry uses; *queen.Client satisfies it.
type KV interface {
	KV(ctx context.Context, ops []queen.KVOp) ([]queen.KVResult, error)
}

// View is one consistent reading of the live set.
type View struct {
	Self  int32
	Nodes []Node         // ascending id
	Ring  *hashring.Ring // over the ids of Nodes
}

// Node returns the live node with id.
func (v View) Node(id int32) (Node, bool) {
	i, ok := slices.BinarySearchFunc(v.Nodes, id, func(n Node, id int32) int { return int(n.ID) - int(id) })
	if !ok {
		return Node{}, false
	}
	return v.Nodes[i], true
}

// Owner is the live node owning key by the rendezvous hash.
func (v View) Owner(key string) (Node, bool) {
	id, ok := v.Ring.Owner(key)
	if !ok {
		return Node{}, false
	}
	return v.Node(id)
}

// Session is this process's hold on one node id.
type Session struct {
	cfg    Config
	kv     KV
	clk    Clock
	log    *slog.Logger
	key    string
	prefix string
	row    json.RawMessage // own row value, fixed for the incarnation

	mu       sync.Mutex
	held     int64 // version of the own row this process wrote last; 0 = none
	view     View
	lastOK   time.Time // send time of the last successful heartbeat
	lastErr  error     // outcome of the last heartbeat; nil = succeeded
	failedAt time.Time // first failure of the current outage
	loggedAt time.Time // last "still unreachable" line
	lost     error     // *LostError once the id is taken
	closed   bool
	badRows  map[string]bool // malformed rows already logged
	changed  chan struct{}
	// beatsOK and beatsFailed count the registry calls of the claim and
	// the heartbeats by outcome (Stats).
	beatsOK, beatsFailed uint64

	done     chan struct{}
	doneOnce sync.Once
	stop     context.CancelFunc
	loopDone chan struct{}
	close    sync.Once
	closeErr error
}

// Start claims cfg.NodeID and starts heartbeating. It blocks for the boot
// claim: immediately when the id is free, up to one TTL plus one heartbeat
// when a predecessor's row must be waited out. A *ConflictError means a live
// process holds the id (a fatal boot). A registry that cannot be reached is
// retried every heartbeat until ctx ends; a refusal that retrying cannot fix
// (bad credential, bad request) fails at once.
func Start(ctx context.Context, kv KV, cfg Config) (*Session, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Wall{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Incarnation == "" {
		var b [8]byte
		_, _ = rand.Read(b[:]) // crypto/rand never fails on supported platforms
		cfg.Incarnation = hex.EncodeToString(b[:])
	}
	row, err := json.Marshal(Node{
		ID: cfg.NodeID, Host: cfg.Host, Port: cfg.Port, Incarnation: cfg.Incarnation,
		Since: cfg.Clock.Now().UnixMilli(), Version: cfg.Version,
	})
	if err != nil {
		return nil, fmt.Errorf("registry: encode row: %w", err)
	}
	s := &Session{
		cfg:      cfg,
		kv:       kv,
		clk:      cfg.Clock,
		log:      cfg.Logger.With("component", "registry", "cluster", cfg.Cluster, "node_id", cfg.NodeID),
		key:      queen.NodeKey(cfg.Cluster, int(cfg.NodeID)),
		prefix:   queen.NodePrefix(cfg.Cluster),
		row:      row,
		view:     View{Self: cfg.NodeID, Ring: hashring.New(nil)},
		badRows:  map[string]bool{},
		changed:  make(chan struct{}),
		done:     make(chan struct{}),
		loopDone: make(chan struct{}),
	}
	if err := s.claim(ctx); err != nil {
		return nil, err
	}
	loopCtx, stop := context.WithCancel(context.Background())
	s.stop = stop
	go s.run(loopCtx)
	return s, nil
}

// ID is this node's id.
func (s *Session) ID() int32 { return s.cfg.NodeID }

// Incarnation is this process's token in the row.
func (s *Session) Incarnation() string { return s.cfg.Incarnation }

// Key is the own row's key.
func (s *Session) Key() string { return s.key }

// HeldVersion is the version of the own row this process last wrote (0 when
// it holds none). Exposed for tests and diagnostics.
func (s *Session) HeldVersion() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held
}

// View is the live set as last read, whether or not it is still trusted;
// check Err before acting on it with authority. Metadata may serve it stale
// (a broker list is advice); ownership must not (use Owner).
func (s *Session) View() View {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.view
}

// Stats is the session as /metrics reports it.
type Stats struct {
	LiveNodes int
	// LastOK is the send time of the last successful heartbeat (or claim).
	LastOK time.Time
	// HeartbeatsOK and HeartbeatsFailed count the claim's and the
	// heartbeats' calls by outcome; a call cut short by Close is neither.
	HeartbeatsOK, HeartbeatsFailed uint64
	Healthy                        bool // Err() == nil
	Lost                           bool // another process took the id
}

// Stats reads the session's counts and health.
func (s *Session) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{LiveNodes: len(s.view.Nodes), LastOK: s.lastOK, HeartbeatsOK: s.beatsOK, HeartbeatsFailed: s.beatsFailed,
		Healthy: s.errLocked() == nil, Lost: s.lost != nil}
}

// Live is View().Nodes.
func (s *Session) Live() []Node { return s.View().Nodes }

// Owner returns the live node owning key (a group id, or a transactional
// id), or an error when this node cannot answer with authority (Err is not
// nil), which a group RPC turns into COORDINATOR_NOT_AVAILABLE.
func (s *Session) Owner(key string) (Node, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.errLocked(); err != nil {
		return Node{}, err
	}
	n, ok := s.view.Owner(key)
	if !ok {
		// Unreachable while healthy: a successful heartbeat's read includes
		// the row it just wrote. Said rather than assumed.
		return Node{}, fmt.Errorf("%w: live set is empty", ErrUnavailable)
	}
	return n, nil
}

// Err is nil while this node's view of the cluster may be acted on: the last
// heartbeat succeeded and was sent less than TTL − heartbeat ago. Otherwise
// it wraps ErrUnavailable, or is the *LostError, or ErrClosed. Staleness is
// judged at call time, so a hung registry turns into an error without any
// heartbeat returning.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.errLocked()
}

// Healthy is Err() == nil.
func (s *Session) Healthy() bool { return s.Err() == nil }

func (s *Session) errLocked() error {
	switch {
	case s.lost != nil:
		return s.lost
	case s.closed:
		return ErrClosed
	case s.lastErr != nil:
		return fmt.Errorf("%w: last heartbeat failed: %w", ErrUnavailable, s.lastErr)
	}
	if age := s.clk.Now().Sub(s.lastOK); age >= s.cfg.trust() {
		return fmt.Errorf("%w: last successful heartbeat was %v ago", ErrUnavailable, age.Round(time.Millisecond))
	}
	return nil
}

// Changed returns a channel closed at the next change of the live set, of a
// heartbeat's outcome (success after failure or the reverse), or when the
// session ends. Take it before reading View so no change falls between.
func (s *Session) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// Done is closed when the session ends: the id was lost (Err is the
// *LostError) or Close was called.
func (s *Session) Done() <-chan struct{} { return s.done }

func (s *Session) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Session) finish() { s.doneOnce.Do(func() { close(s.done) }) }

// Close stops heartbeating and deletes the own row, fenced on the version
// held, within CloseBudget (and ctx), so peers drop this node on their next
// read instead of one TTL later. A row another process took is left alone.
// An error means the delete did not happen; the row then expires on its own.
func (s *Session) Close(ctx context.Context) error {
	s.close.Do(func() {
		s.stop()
		<-s.loopDone
		s.mu.Lock()
		held, lost := s.held, s.lost
		s.mu.Unlock()
		if lost == nil && held != 0 {
			s.closeErr = s.release(ctx, held)
		}
		s.mu.Lock()
		s.closed = true
		s.notifyLocked()
		s.mu.Unlock()
		s.finish()
	})
	return s.closeErr
}

// holder decodes the row a refused conditional write found, and reports
// whether it is this incarnation's own: a write of ours that applied though
// its answer never arrived, so its version is the one to expect next.
func (s *Session) holder(r queen.KVResult) (cur Node, own bool) {
	cur, _ = decodeNode(r.Value)
	return cur, r.Version != 0 && cur.Incarnation == s.cfg.Incarnation
}

func (s *Session) release(ctx context.Context, held int64) error {
	ctx, cancel := context.WithTimeout(ctx, CloseBudget)
	defer cancel()
	// Two attempts: the second only when the first found our own later write
	// (a heartbeat whose answer was lost) under another version.
	for range 2 {
		expect := held
		res, err := s.kv.KV(ctx, []queen.KVOp{{Op: queen.OpDelete, NS: queen.Namespace, Key: s.key, Expect: &expect}})
		if err == nil && len(res) != 1 {
			err = fmt.Errorf("%d results for 1 op", len(res))
		}
		if err != nil {
			return fmt.Errorf("registry: deleting %s at version %d (peers drop this node when the row expires instead): %w", s.key, held, err)
		}
		r := res[0]
		if r.Applied {
			s.log.Info("registry row deleted; peers drop this node on their next read", "key", s.key, "version", held)
			return nil
		}
		cur, own := s.holder(r)
		if own {
			held = r.Version
			continue
		}
		if r.Version == 0 {
			s.log.Info("registry row already gone at close", "key", s.key)
		} else {
			s.log.Warn("registry row belongs to another incarnation at close; left in place",
				"key", s.key, "held", held, "version", r.Version, "holder_incarnation", cur.Incarnation, "holder", cur.Addr())
		}
		return nil
	}
	s.log.Warn("registry row kept moving at close; left to expire", "key", s.key)
	return nil
}
