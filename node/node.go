package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/queen-mq/queen-kafka/budget"
	"github.com/queen-mq/queen-kafka/catalogue"
	"github.com/queen-mq/queen-kafka/config"
	"github.com/queen-mq/queen-kafka/consumergroup"
	"github.com/queen-mq/queen-kafka/coordinator"
	"github.com/queen-mq/queen-kafka/faults"
	"github.com/queen-mq/queen-kafka/fetchsession"
	"github.com/queen-mq/queen-kafka/fetchwatch"
	"github.com/queen-mq/queen-kafka/groupconfig"
	"github.com/queen-mq/queen-kafka/internal/clock"
	"github.com/queen-mq/queen-kafka/internal/version"
	"github.com/queen-mq/queen-kafka/metrics"
	"github.com/queen-mq/queen-kafka/operator"
	"github.com/queen-mq/queen-kafka/ownership"
	"github.com/queen-mq/queen-kafka/producer"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/recordbatch"
	"github.com/queen-mq/queen-kafka/shareadmin"
	"github.com/queen-mq/queen-kafka/sharefetch"
	"github.com/queen-mq/queen-kafka/sharegroup"
	"github.com/queen-mq/queen-kafka/topology"
	"github.com/queen-mq/queen-kafka/transport"
	"github.com/queen-mq/queen-kafka/txn"
)

// maxSeqWindows is how many idempotent producers, and how many
// producer-partitions' sequence windows, a node tracks; the least recently
// used are evicted past it and recover through KIP-360.
const maxSeqWindows = 65536

// Node is one facade node: the Kafka handlers behind the wire (srv), the
// topic catalogue, and the Queen client every call goes through.
type Node struct {
	cfg   config.Facade
	log   *slog.Logger
	queen *queen.Client
	topo  topology.Layout
	cats  *catalogue.Catalogues
	now   func() time.Time // the node's clock; tests substitute it (withClock sets the catalogue's too)
	// producer ids (InitProducerId) and sequence windows (Produce)
	producerIDs *producer.IDs
	sequencer   *producer.Sequencer
	coord       *coordinator.Coordinator // classic consumer groups and committed offsets
	groups      *consumergroup.Manager   // KIP-848 consumer-protocol groups
	groupCfg    *groupconfig.Store       // the GROUP config resource (qk:groupcfg:)
	shares      *sharegroup.Manager      // KIP-932 share groups' membership
	shareAdmin  *shareadmin.Admin        // the share-group offsets admin APIs
	txns        *txn.Manager             // transactional ids and their stages
	txnShared   *txn.Shared              // cluster mode: staging in Queen at any node; nil in single mode
	sessions    *fetchsession.Cache      // KIP-227 fetch sessions (fetch.go), this process's only
	parked      *fetchwatch.Calls        // the bound on wide sessions' parked Queen reads (fetch_watched.go)
	shareFetch  *sharefetch.Server       // KIP-932 ShareFetch and ShareAcknowledge, share sessions
	// srv is the wire: the listener, its connections, framing, SASL and
	// dispatch into the version table's handlers (versions.go).
	srv *transport.Server
	// answers is the node's budget of Queen answers being read and
	// decoded (answerMemory).
	answers *budget.Budget
	// fetchMem is the node's budget of fetch response batches built and
	// not yet written, across every connection (fetchMemory).
	fetchMem *budget.Budget
	// batches encodes fetch answers, compressed as each topic's
	// compression.type asks.
	batches *recordbatch.Encoder
	// cluster is cluster mode (registry session, topology, ownership); nil
	// in single mode, where none of it exists.
	cluster *cluster
	// obs hears every request answered and what the node does (observe.go);
	// metrics is what it is outside tests, served by the operator listener
	// (ops.go), and health the verdict on Queen its client keeps for /readyz.
	obs     Observer
	metrics *metrics.Metrics
	health  queen.Health
	http    *operator.Server

	mu sync.Mutex
	// stopping ends when Shutdown begins: a wait that has no answer to lose
	// (a Fetch's long poll) is cut by it rather than waited out (untilStop).
	stopping context.Context
	stop     context.CancelFunc
	// released runs after the connections drain, in order: the step at
	// which cluster mode hands its node id back.
	released []func(context.Context) error
}

// answerMemory bounds the bytes of Queen's answers being read and decoded
// at once across the node's calls (queen.Config.Answers): a fetch call's
// answer may hold 64 MiB, and every consumer's fetch makes such calls.
const answerMemory = 256 << 20

// New builds a node from a validated config.Facade. Nothing is bound yet.
func New(cfg config.Facade, log *slog.Logger) (*Node, error) {
	if log == nil {
		log = slog.Default()
	}
	n := &Node{
		cfg:      cfg,
		log:      log,
		fetchMem: budget.New(fetchMemory),
		answers:  budget.New(answerMemory),
		batches:  recordbatch.NewEncoder(),
		now:      time.Now,
	}
	n.metrics = metrics.New(version.String(), n.snapshot)
	n.obs = n.metrics
	n.health.Next = n.metrics
	q, err := queen.New(queen.Config{URL: cfg.QueenURL, Token: cfg.QueenToken, Observer: &n.health, Answers: n.answers})
	if err != nil {
		return nil, fmt.Errorf("queen client: %w", err)
	}
	n.queen = q
	n.stopping, n.stop = context.WithCancel(context.Background())
	n.topo = topology.Single{Host: cfg.AdvertisedHost, Port: cfg.AdvertisedPort, Cluster: cfg.Cluster}
	var own ownership.Owners = ownership.Single{Node: selfBroker(cfg)}
	if cfg.Clustered() {
		n.cluster = newCluster(registryConfig(cfg, log), q)
		n.topo, own = n.cluster.topo, n.cluster.owners
	}
	n.cats = catalogue.New(catalogue.Deps{DefaultPartitions: cfg.DefaultPartitions, Now: n.now, Queen: q, Clustered: n.cluster != nil, Transient: transientIdentity})
	n.producerIDs = producer.NewIDs()
	n.sequencer = producer.NewSequencer(maxSeqWindows)
	n.sessions = fetchsession.New(fetchsession.Config{})
	n.parked = fetchwatch.NewCalls(0, identityShare(cfg))
	n.groups = newConsumerGroups(cfg, q, log, own, n.Incarnation())
	n.groupCfg = groupconfig.New(groupconfig.Config{Broker: groupconfig.KafkaBroker().
		WithStatic(groupconfig.ConsumerSessionTimeout, cfg.ConsumerGroupSessionTimeout.Milliseconds()).
		WithStatic(groupconfig.ConsumerHeartbeatInterval, cfg.ConsumerGroupHeartbeatInterval.Milliseconds()).
		WithStatic(groupconfig.ShareSessionTimeout, cfg.ShareGroupSessionTimeout.Milliseconds()).
		WithStatic(groupconfig.ShareHeartbeatInterval, cfg.ShareGroupHeartbeatInterval.Milliseconds())})
	n.shares = n.newShareGroups(cfg, log, own)
	n.coord = newCoordinator(cfg, q, log, own, n.Incarnation(), n.groups, n.shares, unstableOffsets{n})
	n.shareAdmin = shareadmin.New(n.shares, own)
	n.shareFetch = sharefetch.New(sharefetch.Config{Members: n.shares, Configs: n.groupCfg, Observe: n.metrics, Mem: n.fetchMem, Enc: n.batches, Compression: cfg.FetchCompression, Now: func() time.Time { return n.now() }, Stopping: n.stopping, Log: log})
	n.txns = newTxns(cfg, q, log, n.producerIDs, n.coord, clock.Wall{})
	if cfg.Clustered() {
		n.txnShared = newTxnShared(cfg, q, log, n.coord, clock.Wall{})
	}
	n.srv = n.newServer(transport.NewTable(n.apiTable(), n.features()...))
	return n, nil
}

// newServer is the wire in front of the node's handlers: table is the
// version table (apiTable), the node's configuration its listener's, and
// the node hears of connections and answers through its hooks.
func (n *Node) newServer(table *transport.Table) *transport.Server {
	return transport.NewServer(transport.Config{
		Addr: n.cfg.Addr, TLSCertificate: n.cfg.TLSCertificate, SASL: n.cfg.SASL != "", ForwardSNIHost: n.cfg.ForwardSNIHost,
		MaxConnections: n.cfg.MaxConnections, Queen: n.queen, Table: table, Log: n.log,
		Observer: wireObserver{n}, Now: func() time.Time { return n.now() },
		Self:      func() (string, int32) { return n.topo.ClusterID(), n.topo.SelfID() },
		SASLFault: faults.SASL,
		ConnValue: func(*transport.Conn) any { return &connState{} },
		Forget:    func(c *transport.Conn) { n.txns.Disconnected(c.ID()); n.shareFetch.Disconnected(c) },
		Answered:  n.observeAnswer,
	})
}

// Config returns the node's configuration.
func (n *Node) Config() config.Facade { return n.cfg }

// Queen returns the node's own Queen client (QUEEN_TOKEN).
func (n *Node) Queen() *queen.Client { return n.queen }

// OnRelease registers a step run by Shutdown after every connection has
// drained (cluster mode deletes its registry row there).
func (n *Node) OnRelease(fn func(context.Context) error) {
	n.mu.Lock()
	n.released = append(n.released, fn)
	n.mu.Unlock()
}

// Listen binds QUEEN_KAFKA_ADDR (with TLS when configured) and returns the
// bound address; Serve then accepts on it.
func (n *Node) Listen() (net.Addr, error) {
	addr, err := n.srv.Listen()
	if err != nil {
		return nil, err
	}
	if err := n.listenHTTP(); err != nil {
		n.srv.Unlisten()
		return nil, err
	}
	return addr, nil
}

// Serve accepts connections until Shutdown (nil) or a listener failure.
// It binds first when Listen was not called.
func (n *Node) Serve(ctx context.Context) error {
	if addr, _ := n.srv.Bound(); addr == "" {
		if _, err := n.Listen(); err != nil {
			return err
		}
	}
	// The transaction timeout sweep runs while the node serves.
	n.txns.Start()
	return n.srv.Serve(ctx)
}

// Shutdown stops the node in three explicit steps, after a cluster node's
// hand-off (handOff: its row deleted, it keeps serving until every peer has
// read that, at most until handOffLeavesDrain before the drain's share
// ends): close the listener so no
// new connection is accepted; let the connections already served drain
// (each finishes the requests it has read and closes); then run the release
// steps, and close the operator listener. Waits with no answer to lose are
// cut at once: a JoinGroup or SyncGroup parked in the coordinator is
// answered NOT_COORDINATOR, and a Fetch's long poll ends its connection
// (untilStop), so a parked consumer never holds a stop for its max wait. If
// the drain's share of ctx ends first (all of it but drainAfterCancel and
// releaseBudget), every request still being handled is cancelled and its
// connection closed; the release steps still run, on what is left and at
// least releaseBudget, since a late release is only slower.
func (n *Node) Shutdown(ctx context.Context) error {
	handOffCtx, cancelHandOff := ctx, context.CancelFunc(func() {})
	if dl, ok := ctx.Deadline(); ok {
		handOffCtx, cancelHandOff = context.WithDeadline(ctx, dl.Add(-drainAfterCancel-releaseBudget-handOffLeavesDrain))
	}
	handOffErr := n.handOff(handOffCtx)
	cancelHandOff()
	n.srv.Close()
	n.stop()
	n.coord.Close()
	drainCtx, cancelDrain := ctx, context.CancelFunc(func() {})
	if dl, ok := ctx.Deadline(); ok {
		drainCtx, cancelDrain = context.WithDeadline(ctx, dl.Add(-drainAfterCancel-releaseBudget))
	}
	drainErr := n.srv.Drain(drainCtx, drainAfterCancel)
	cancelDrain()
	n.srv.Cancel()
	n.txns.Close()
	releaseCtx, cancelRelease := releaseContext(ctx)
	releaseErr := n.release(releaseCtx)
	cancelRelease()
	// The operator listener goes last: /metrics and a failing /readyz
	// stay up for the whole drain.
	return errors.Join(handOffErr, drainErr, releaseErr, n.closeHTTP(ctx))
}

// untilStop is ctx, ended as well when the node begins to stop. It is for
// waits that have no answer to lose, so that a stop does not wait them out;
// stopped then tells the handler its wait was cut by the stop.
func (n *Node) untilStop(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	unhook := context.AfterFunc(n.stopping, cancel)
	return ctx, func() { unhook(); cancel() }
}

// stopped reports whether the node has begun to stop.
func (n *Node) stopped() bool { return n.stopping.Err() != nil }

// A shutdown's deadline is shared out so that its last step still fits:
// the drain ends drainAfterCancel+releaseBudget before it, and waits at most
// drainAfterCancel for the handlers it cancelled (each returns as soon as
// its Queen call sees the cancellation); the release steps (the fenced
// delete of the registry row) get what is left, at least releaseBudget. So
// the 4 s the process gives its stop is the whole stop, inside the embedded
// supervisor's 5 s grace before SIGKILL.
const (
	drainAfterCancel = 500 * time.Millisecond
	releaseBudget    = time.Second
	// handOffLeavesDrain is the least a cluster node's hand-off leaves the
	// drain: the hand-off already did the release's one step (the row's
	// delete), so the drain keeps this and the release's budget.
	handOffLeavesDrain = 500 * time.Millisecond
)

// releaseContext is the release steps' context: ctx's deadline, but never
// less than releaseBudget from now, and not cancelled with ctx (a late
// release is only slower, a skipped one leaves the row to its TTL).
func releaseContext(ctx context.Context) (context.Context, context.CancelFunc) {
	free := context.WithoutCancel(ctx)
	dl, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(free)
	}
	if least := time.Now().Add(releaseBudget); dl.Before(least) {
		dl = least
	}
	return context.WithDeadline(free, dl)
}

func (n *Node) release(ctx context.Context) error {
	n.mu.Lock()
	steps := append([]func(context.Context) error(nil), n.released...)
	n.mu.Unlock()
	var errs []error
	for _, fn := range steps {
		if err := fn(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
