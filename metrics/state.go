package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Budget is one budget of bytes: what is held of it now, and its size.
type Budget struct{ InUse, Size int64 }

// Snapshot is a node's state as one scrape reads it.
type Snapshot struct {
	OpenConnections int

	// Groups are the groups this node coordinates, one entry per state
	// (Empty, PreparingRebalance, CompletingRebalance, Stable, Dead).
	Groups     []GroupState
	Rebalances uint64 // rebalances completed with members

	// ConsumerGroups are the KIP-848 consumer-protocol groups this node
	// coordinates.
	ConsumerGroups ConsumerGroups

	Producers         int    // idempotent producers whose epochs are tracked
	SequenceWindows   int    // producer-partitions whose sequences are tracked
	ProducerEvictions uint64 // producers evicted past the bound
	WindowEvictions   uint64 // sequence windows evicted past the bound
	ProducerIDsHeld   int64  // producer ids reserved and not yet handed out

	TxnOpen      int
	TxnCommitted uint64
	TxnAborted   uint64

	DecodeBudget Budget // the process-wide produce decode budget
	FrameBudget  Budget // request frames being read or awaiting their answer
	FetchBudget  Budget // fetch response batches built and not yet written
	AnswerBudget Budget // Queen answers being read and decoded

	FetchSessions FetchSessions

	Cluster *Cluster // nil in single mode
}

// FetchSessions is the node's KIP-227 fetch session cache (Kafka's
// FetchSessionCache metrics, and the fetches by kind).
type FetchSessions struct {
	Sessions   int    // sessions cached now
	Partitions int    // partitions cached across them
	Evictions  uint64 // sessions evicted to make room for another
	// Fetches by kind: full (opening a session), incremental, sessionless
	// (epoch -1, or a version below 7).
	Full, Incremental, Sessionless uint64
	// Fetches refused at the request level, by error.
	NotFound, InvalidEpoch, TopicIDError uint64
	// Parked are the Queen reads wide sessions keep parked now (package
	// fetchwatch), and ParkedLimit the node's bound on them.
	Parked, ParkedLimit int
}

// GroupState is how many groups are in one state, and their members.
type GroupState struct {
	State   string
	Groups  int
	Members int
}

// ConsumerGroups is the node's KIP-848 consumer-protocol groups: by state
// (Empty, Assigning, Reconciling, Stable), the group epochs bumped (each
// a rebalance: a member joined, left, was fenced or changed its
// subscription, or the subscribed topics changed), the highest group epoch
// held, and the target assignments computed with their total time.
type ConsumerGroups struct {
	States      []GroupState
	Rebalances  uint64
	MaxEpoch    int32
	Assignments uint64
	AssignTime  time.Duration
}

// Cluster is cluster mode's membership as this node sees it.
type Cluster struct {
	Joined    bool // the node id is claimed
	Healthy   bool // the last heartbeat succeeded and is recent enough to act on
	LiveNodes int
	// HeartbeatAge is the time since the last successful heartbeat was
	// sent (0 before the claim).
	HeartbeatAge     time.Duration
	HeartbeatsOK     uint64
	HeartbeatsFailed uint64
	Lost             bool // another process took this node id
}

// budgetDescs are a budget's two gauges: held now, and its size.
type budgetDescs struct{ used, size *prometheus.Desc }

// stateCollector turns a Snapshot into metrics at every scrape.
type stateCollector struct {
	snapshot func() Snapshot

	conns, groups, members, rebalances                 *prometheus.Desc
	cgGroups, cgMembers, cgRebalances, cgEpoch         *prometheus.Desc
	cgAssignments, cgAssignTime                        *prometheus.Desc
	producers, windows, evictions, idsHeld             *prometheus.Desc
	txnOpen, txns                                      *prometheus.Desc
	decode, frames, fetch, answers                     budgetDescs
	joined, healthy, live, hbAge, heartbeats, lostDesc *prometheus.Desc
	sessions, sessionParts, sessionEvicts              *prometheus.Desc
	sessionFetches, sessionErrors, parked, parkedLimit *prometheus.Desc
}

func newStateCollector(snapshot func() Snapshot) *stateCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(ns, "", name), help, labels, nil)
	}
	return &stateCollector{
		snapshot:      snapshot,
		conns:         d("open_connections", "Kafka connections open now."),
		groups:        d("groups", "Consumer groups this node coordinates, by state.", "state"),
		members:       d("group_members", "Members of the groups this node coordinates, by their group's state.", "state"),
		rebalances:    d("rebalances_total", "Rebalances completed with members (a new generation handed to its members)."),
		cgGroups:      d("consumer_groups", "KIP-848 consumer-protocol groups this node coordinates, by state (Empty, Assigning, Reconciling, Stable).", "state"),
		cgMembers:     d("consumer_group_members", "Members of the KIP-848 consumer-protocol groups this node coordinates, by their group's state.", "state"),
		cgRebalances:  d("consumer_group_rebalances_total", "Group epochs bumped in KIP-848 consumer-protocol groups: a member joined, left, was fenced or changed its subscription, or the subscribed topics changed."),
		cgEpoch:       d("consumer_group_epoch_max", "The highest group epoch among the KIP-848 consumer-protocol groups this node holds."),
		cgAssignments: d("consumer_group_assignments_total", "Target assignments computed by the server-side assignors (uniform, range)."),
		cgAssignTime:  d("consumer_group_assignment_seconds_total", "Time spent computing target assignments; divided by consumer_group_assignments_total it is the mean assignment time."),
		producers:     d("idempotent_producers", "Idempotent producers whose epochs this node tracks."),
		windows:       d("producer_sequence_windows", "Producer-partitions whose sequence windows this node tracks."),
		idsHeld:       d("producer_ids_reserved", "Producer ids this node has reserved in Queen and not yet handed out: InitProducerId answers from them with no KV call (a block of 1,000 is reserved ahead once the current one is half spent)."),
		evictions:     d("producer_evictions_total", "Least recently used producer state evicted past the bound, by kind (producer, window); an evicted producer recovers through KIP-360.", "kind"),
		txnOpen:       d("transactions_open", "Transactions open now."),
		txns:          d("transactions_total", "Transactions ended, by outcome (committed, aborted).", "outcome"),
		decode: budgetDescs{d("decode_budget_bytes", "Bytes of the process-wide produce decode budget held now."),
			d("decode_budget_limit_bytes", "Size of the process-wide produce decode budget.")},
		frames: budgetDescs{d("frame_budget_bytes", "Bytes of request frames being read or awaiting their answer, held against the node's frame budget."),
			d("frame_budget_limit_bytes", "Size of the node's frame budget.")},
		fetch: budgetDescs{d("fetch_budget_bytes", "Bytes of fetch response record batches built and not yet written, held against the node's fetch response budget."),
			d("fetch_budget_limit_bytes", "Size of the node's fetch response budget; past it a response takes no further partition's records but its first record.")},
		answers: budgetDescs{d("queen_answer_budget_bytes", "Bytes of Queen answers being read and decoded, held against the node's answer budget."),
			d("queen_answer_budget_limit_bytes", "Size of the node's budget of Queen answers being read and decoded; past it a call waits to read its answer.")},
		joined:     d("cluster_joined", "1 once this node's id is claimed in the registry (cluster mode only)."),
		healthy:    d("cluster_healthy", "1 while the last heartbeat succeeded and is recent enough to act on (cluster mode only)."),
		live:       d("cluster_live_nodes", "Live nodes in the last registry read (cluster mode only)."),
		hbAge:      d("cluster_heartbeat_age_seconds", "Time since the last successful heartbeat was sent (cluster mode only)."),
		heartbeats: d("cluster_heartbeats_total", "Registry heartbeats (the claim's included), by outcome: ok, failed (cluster mode only).", "outcome"),
		lostDesc:   d("cluster_node_id_lost", "1 once another process took this node's id (cluster mode only)."),

		sessions:       d("fetch_sessions", "Incremental fetch sessions (KIP-227) cached now (Kafka's NumIncrementalFetchSessions)."),
		sessionParts:   d("fetch_session_partitions", "Partitions cached across the fetch sessions (Kafka's NumIncrementalFetchPartitionsCached)."),
		sessionEvicts:  d("fetch_session_evictions_total", "Fetch sessions evicted to make room for a new one (Kafka's IncrementalFetchSessionEvictionsPerSec)."),
		sessionFetches: d("fetch_session_fetches_total", "Fetch requests by session kind: full (opens a session), incremental, sessionless (epoch -1, or below v7).", "kind"),
		sessionErrors:  d("fetch_session_errors_total", "Fetch requests refused by the session protocol, by error (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH, FETCH_SESSION_TOPIC_ID_ERROR).", "error"),
		parked:         d("fetch_parked_reads", "Queen fetch calls parked now for wide fetch sessions, waiting for a write to their partitions between fetches."),
		parkedLimit:    d("fetch_parked_reads_limit", "The node's bound on parked Queen fetch calls; past it a wide fetch waits without them."),
	}
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.conns, c.groups, c.members, c.rebalances, c.cgGroups, c.cgMembers, c.cgRebalances, c.cgEpoch, c.cgAssignments, c.cgAssignTime, c.producers, c.windows, c.evictions, c.idsHeld,
		c.txnOpen, c.txns, c.decode.used, c.decode.size, c.frames.used, c.frames.size, c.fetch.used, c.fetch.size, c.answers.used, c.answers.size, c.joined, c.healthy, c.live, c.hbAge, c.heartbeats, c.lostDesc,
		c.sessions, c.sessionParts, c.sessionEvicts, c.sessionFetches, c.sessionErrors, c.parked, c.parkedLimit} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.snapshot()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge(c.conns, float64(s.OpenConnections))
	for _, g := range s.Groups {
		gauge(c.groups, float64(g.Groups), g.State)
		gauge(c.members, float64(g.Members), g.State)
	}
	counter(c.rebalances, s.Rebalances)
	cg := &s.ConsumerGroups
	for _, g := range cg.States {
		gauge(c.cgGroups, float64(g.Groups), g.State)
		gauge(c.cgMembers, float64(g.Members), g.State)
	}
	counter(c.cgRebalances, cg.Rebalances)
	gauge(c.cgEpoch, float64(cg.MaxEpoch))
	counter(c.cgAssignments, cg.Assignments)
	ch <- prometheus.MustNewConstMetric(c.cgAssignTime, prometheus.CounterValue, cg.AssignTime.Seconds())
	gauge(c.producers, float64(s.Producers))
	gauge(c.windows, float64(s.SequenceWindows))
	gauge(c.idsHeld, float64(s.ProducerIDsHeld))
	counter(c.evictions, s.ProducerEvictions, "producer")
	counter(c.evictions, s.WindowEvictions, "window")
	gauge(c.txnOpen, float64(s.TxnOpen))
	counter(c.txns, s.TxnCommitted, "committed")
	counter(c.txns, s.TxnAborted, "aborted")
	for _, b := range []struct {
		d budgetDescs
		v Budget
	}{{c.decode, s.DecodeBudget}, {c.frames, s.FrameBudget}, {c.fetch, s.FetchBudget}, {c.answers, s.AnswerBudget}} {
		gauge(b.d.used, float64(b.v.InUse))
		gauge(b.d.size, float64(b.v.Size))
	}
	fs := &s.FetchSessions
	gauge(c.sessions, float64(fs.Sessions))
	gauge(c.sessionParts, float64(fs.Partitions))
	counter(c.sessionEvicts, fs.Evictions)
	counter(c.sessionFetches, fs.Full, "full")
	counter(c.sessionFetches, fs.Incremental, "incremental")
	counter(c.sessionFetches, fs.Sessionless, "sessionless")
	counter(c.sessionErrors, fs.NotFound, "FETCH_SESSION_ID_NOT_FOUND")
	counter(c.sessionErrors, fs.InvalidEpoch, "INVALID_FETCH_SESSION_EPOCH")
	counter(c.sessionErrors, fs.TopicIDError, "FETCH_SESSION_TOPIC_ID_ERROR")
	gauge(c.parked, float64(fs.Parked))
	gauge(c.parkedLimit, float64(fs.ParkedLimit))
	if cl := s.Cluster; cl != nil {
		gauge(c.joined, bool01(cl.Joined))
		gauge(c.healthy, bool01(cl.Healthy))
		gauge(c.live, float64(cl.LiveNodes))
		gauge(c.hbAge, cl.HeartbeatAge.Seconds())
		counter(c.heartbeats, cl.HeartbeatsOK, "ok")
		counter(c.heartbeats, cl.HeartbeatsFailed, "failed")
		gauge(c.lostDesc, bool01(cl.Lost))
	}
}

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
