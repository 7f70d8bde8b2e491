package sharefetch

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/budget"
	"github.com/queen-mq/queen-kafka/catalogue"
	"github.com/queen-mq/queen-kafka/faults"
	"github.com/queen-mq/queen-kafka/fetchread"
	"github.com/queen-mq/queen-kafka/metrics"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/recordbatch"
	"github.com/queen-mq/queen-kafka/sharepartition"
	"github.com/queen-mq/queen-kafka/sharesession"
)

// KV is the Queen route share-partition state is kept through.
type KV = queen.KVCaller

// Members answers whether member is a current member of share group
// group: 0 if so, else the Kafka code a ShareFetch or ShareAcknowledge is
// answered (UNKNOWN_MEMBER_ID, GROUP_ID_NOT_FOUND, ...). Package
// sharegroup's Manager satisfies it; any node asks it for any group.
type Members interface {
	Member(ctx context.Context, kv KV, group, member string) int16
}

// Configs answers a share group's share-partition limits and its
// share.auto.offset.reset (the GROUP config resource; Defaults until one is
// wired).
type Configs interface {
	Share(ctx context.Context, kv KV, group string) (sharepartition.Config, sharepartition.Reset, error)
}

// Defaults is Kafka's defaults for every group: sharepartition's
// DefaultConfig and share.auto.offset.reset latest.
type Defaults struct{}

// Share is Kafka's defaults.
func (Defaults) Share(context.Context, KV, string) (sharepartition.Config, sharepartition.Reset, error) {
	return sharepartition.DefaultConfig(), sharepartition.Reset{Kind: sharepartition.ResetLatest}, nil
}

// Observer hears what share-partitions did (*metrics.Metrics is one).
type Observer interface {
	Share(metrics.ShareDelta)
}

// Topics resolves the topics a request names by id, and refuses the
// partitions a reader may not read (*catalogue.Verdicts is one).
type Topics interface {
	OfID(ctx context.Context, id [16]byte) (string, catalogue.Verdict, error)
	Refusal(ctx context.Context, topic string, tv *catalogue.Verdict, p int32) (code int16, refused bool)
}

// Conn is the connection a request came on: its Queen client (KV and
// fetch), logger, the hold of the node's fetch budget until the answer is
// written, and its id (a share session is evicted when it closes).
// transport.Conn is one.
type Conn interface {
	fetchread.Conn
	ID() uint64
}

// Config is what a Server is built from.
type Config struct {
	Members Members  // nil: every member is current (until the group side is wired)
	Configs Configs  // nil: Defaults
	Observe Observer // nil: none
	// Mem is the node's fetch response budget, Enc its batch encoder;
	// Compression the facade's default fetch codec (recordbatch.Codec*).
	Mem         *budget.Budget
	Enc         *recordbatch.Encoder
	Compression int
	MaxSessions int // group.share.max.share.sessions; 0: Kafka's 2,000
	MaxHandles  int // share-partition states cached; 0: 10,000
	Now         func() time.Time
	// Stopping ends when the node begins to stop: a long poll is cut by it
	// (the request is answered with what it has).
	Stopping context.Context
	Log      *slog.Logger
}

// DefaultMaxHandles bounds the share-partition states a node caches; one
// evicted is read again from its KV row when next used.
const DefaultMaxHandles = 10000

// Server is a node's share data path.
type Server struct {
	cfg      Config
	sessions *sharesession.Cache

	mu      sync.Mutex
	handles map[sharepartition.Key]*entry
	names   map[[16]byte]string // topic ids seen, for releases outside a request
}

// entry is one cached share-partition and what was last reported of it.
type entry struct {
	h *sharepartition.Handle

	mu       sync.Mutex
	cfg      sharepartition.Config
	last     sharepartition.Stats
	inFlight int
}

// New is a node's share data path.
func New(cfg Config) *Server {
	if cfg.Configs == nil {
		cfg.Configs = Defaults{}
	}
	if cfg.MaxHandles <= 0 {
		cfg.MaxHandles = DefaultMaxHandles
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Stopping == nil {
		cfg.Stopping = context.Background()
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Server{cfg: cfg, sessions: sharesession.New(cfg.MaxSessions), handles: make(map[sharepartition.Key]*entry), names: make(map[[16]byte]string)}
}

// Sessions are the node's share session figures.
func (s *Server) Sessions() sharesession.Stats { return s.sessions.Stats() }

func (s *Server) member(ctx context.Context, kv KV, group, member string) int16 {
	if s.cfg.Members == nil {
		return 0
	}
	return s.cfg.Members.Member(ctx, kv, group, member)
}

// entry is the cached handle of group's share-partition topic/p, made with
// cfg and reset (read through q) when absent, its limits brought to cfg.
func (s *Server) entry(q *queen.Client, group, topic string, p int32, cfg sharepartition.Config, reset sharepartition.Reset) *entry {
	k := sharepartition.Key{Group: group, Topic: topic, Partition: p}
	s.mu.Lock()
	e := s.handles[k]
	if e == nil {
		if len(s.handles) >= s.cfg.MaxHandles {
			for old, oe := range s.handles { // any one: it is only read again
				delete(s.handles, old)
				s.evicted(oe)
				break
			}
		}
		log := queenLog{q: q, topic: topic, part: strconv.FormatInt(int64(p), 10)}
		e = &entry{h: sharepartition.NewHandle(k, cfg, sharepartition.ResetInitializer(reset, log, s.cfg.Now)), cfg: cfg}
		s.handles[k] = e
	}
	s.mu.Unlock()
	e.mu.Lock()
	if e.cfg != cfg {
		e.cfg = cfg
		e.h.SetConfig(cfg)
	}
	e.mu.Unlock()
	return e
}

// evicted takes a dropped entry's in-flight offsets off the gauge.
func (s *Server) evicted(e *entry) {
	e.mu.Lock()
	n := e.inFlight
	e.inFlight = 0
	e.mu.Unlock()
	if s.cfg.Observe != nil && n != 0 {
		s.cfg.Observe.Share(metrics.ShareDelta{InFlight: -int64(n)})
	}
}

// observe reports what e's partition did since its last report (a reload
// starts its counters afresh), and refused acknowledgement batches.
func (s *Server) observe(e *entry, refused int) {
	if s.cfg.Observe == nil {
		return
	}
	st, inFlight := e.h.Stats(), e.h.InFlight()
	e.mu.Lock()
	last := e.last
	if st.Acquisitions < last.Acquisitions || st.Archived < last.Archived || st.Accepted < last.Accepted ||
		st.Released < last.Released || st.LockExpiries < last.LockExpiries {
		last = sharepartition.Stats{}
	}
	d := metrics.ShareDelta{
		Acquired: st.Acquisitions - last.Acquisitions, Accepted: st.Accepted - last.Accepted,
		Released: st.Released - last.Released, Rejected: st.Rejected - last.Rejected,
		Archived: st.Archived - last.Archived, LockExpiries: st.LockExpiries - last.LockExpiries,
		AckRefused: uint64(refused), InFlight: int64(inFlight - e.inFlight),
	}
	for i := range d.Deliveries {
		d.Deliveries[i] = st.Deliveries[i] - last.Deliveries[i]
	}
	e.last, e.inFlight = st, inFlight
	e.mu.Unlock()
	s.cfg.Observe.Share(d)
}

// name is the topic id's name as last resolved ("" unknown).
func (s *Server) name(id [16]byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.names[id]
}

func (s *Server) learn(id [16]byte, name string) {
	if name == "" {
		return
	}
	s.mu.Lock()
	if len(s.names) >= s.cfg.MaxHandles {
		clear(s.names)
	}
	s.names[id] = name
	s.mu.Unlock()
}

// ReleaseMember gives back every record member of group holds in the
// share-partitions keys name (it left the group or was fenced: the group
// side's OnMemberGone), as one fenced write each. It returns the first
// failure; the others are still tried (a record not released is released
// when its lock expires).
func (s *Server) ReleaseMember(ctx context.Context, kv KV, q *queen.Client, member string, keys []sharepartition.Key) error {
	var first error
	for _, k := range keys {
		cfg, reset, err := s.cfg.Configs.Share(ctx, kv, k.Group)
		if err != nil {
			return err
		}
		e := s.entry(q, k.Group, k.Topic, k.Partition, cfg, reset)
		if _, err := e.h.ReleaseMember(ctx, kv, member, s.cfg.Now()); err != nil && first == nil {
			first = err
		}
		s.observe(e, 0)
	}
	return first
}

// release gives back what member holds in a closed session's partitions.
func (s *Server) release(ctx context.Context, c Conn, k sharesession.Key, parts []sharesession.Partition) {
	keys := make([]sharepartition.Key, 0, len(parts))
	for _, p := range parts {
		if name := s.name(p.TopicID); name != "" {
			keys = append(keys, sharepartition.Key{Group: k.Group, Topic: name, Partition: p.Partition})
		}
	}
	if err := s.ReleaseMember(ctx, c.Queen(), c.Queen(), k.Member, keys); err != nil {
		faults.Log(c.Logger(), "share session release", err)
	}
}

// releaseTimeout bounds the release of a closed connection's sessions.
const releaseTimeout = 10 * time.Second

// Disconnected ends the share sessions last used on connection c, as
// Kafka evicts them, and releases what their members hold in them, in the
// background (the connection is gone; the records' locks bound the wait).
func (s *Server) Disconnected(c Conn) {
	ended := s.sessions.Disconnected(c.ID())
	if len(ended) == 0 {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
		defer cancel()
		for _, e := range ended {
			s.release(ctx, c, e.Key, e.Partitions)
		}
	}()
}

// codeOf is the Kafka code of a failed share-partition call: its own
// code, or the fetch family's mapping of a failed Queen call (never 0: an
// acknowledgement not applied must not be answered success).
func codeOf(err error) int16 {
	var se *sharepartition.Error
	if errors.As(err, &se) {
		return se.Code
	}
	if code, _, _, _ := faults.Fetch(err); code != 0 {
		return code
	}
	return kerr.UnknownServerError.Code
}

// queenLog is a partition's log as share.auto.offset.reset reads it:
// ListOffsets' searches over Queen's fetch route.
type queenLog struct {
	q           *queen.Client
	topic, part string
}

func (l queenLog) search(ctx context.Context, target int64) (int64, bool, error) {
	resp := kmsg.NewListOffsetsResponseTopicPartition()
	resp.Offset, resp.Timestamp = -1, -1
	sr := &fetchread.Search{Topic: l.topic, Part: l.part, Resp: &resp, Target: target}
	if _, err := fetchread.Offsets(ctx, l.q, []*fetchread.Search{sr}); err != nil {
		return 0, false, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return 0, false, err
	}
	return resp.Offset, resp.Offset >= 0, nil
}

func (l queenLog) StartOffset(ctx context.Context) (int64, error) {
	off, _, err := l.search(ctx, fetchread.Earliest)
	return off, err
}

func (l queenLog) EndOffset(ctx context.Context) (int64, error) {
	off, _, err := l.search(ctx, fetchread.Latest)
	return off, err
}

func (l queenLog) OffsetForTime(ctx context.Context, ms int64) (int64, bool, error) {
	return l.search(ctx, ms)
}
