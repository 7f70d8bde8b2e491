package node

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/queen-mq/queen-kafka/budget"
	"github.com/queen-mq/queen-kafka/metrics"
	"github.com/queen-mq/queen-kafka/operator"
)

// The operator listener (QUEEN_KAFKA_HTTP_ADDR): /metrics over the node's
// own registry, /healthz, /readyz over the checks below, /debug/pprof/. It
// is bound by Listen, right after the Kafka listener, so that it answers
// (not ready) while a cluster node waits out a predecessor's registry row,
// and closed last by Shutdown.

// listenHTTP binds the operator listener when one is configured.
func (n *Node) listenHTTP() error {
	if n.cfg.HTTPAddr == "" {
		return nil
	}
	s, err := operator.Listen(n.cfg.HTTPAddr, operator.Handler(n.metrics.Handler(), n.Ready), n.log)
	if err != nil {
		return fmt.Errorf("listen on QUEEN_KAFKA_HTTP_ADDR=%s: %w", n.cfg.HTTPAddr, err)
	}
	n.mu.Lock()
	n.http = s
	n.mu.Unlock()
	return nil
}

// HTTPAddr is the operator listener's bound address, nil when it is off or
// not bound yet.
func (n *Node) HTTPAddr() net.Addr {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.http == nil {
		return nil
	}
	return n.http.Addr()
}

// closeHTTP closes the operator listener on a budget of its own: what the
// drain left of ctx may be nothing, and a scrape in flight is short.
func (n *Node) closeHTTP(ctx context.Context) error {
	n.mu.Lock()
	s := n.http
	n.http = nil
	n.mu.Unlock()
	if s == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	return s.Close(ctx)
}

// Ready is /readyz. A node is ready when all three hold:
//
//   - listener: the Kafka listener is bound and not draining (Shutdown
//     fails it at once, so a load balancer stops sending clients first);
//   - cluster: in cluster mode, the node id is claimed (JoinCluster done:
//     not while a predecessor's registry row is waited out) and not lost;
//     single mode passes;
//   - queen: in cluster mode, the registry session is healthy (its last
//     heartbeat, a call to Queen every QUEEN_KAFKA_CLUSTER_HEARTBEAT_MS,
//     succeeded and is recent enough to act on); in single mode, the last
//     call to Queen of any connection did not fail for want of Queen
//     (transport, timeout, 408/502/503/504, 5xx; any other answer, a 401 or
//     a 429 included, is Queen answering), and some call has been answered
//     since boot (an unreachable QUEEN_URL is not ready before any traffic
//     finds it out). Until a call is answered, and after such a failure,
//     /readyz asks Queen itself (one KV read, at most once per second)
//     rather than wait for traffic a not-ready node no longer gets.
func (n *Node) Ready(ctx context.Context) []operator.Check {
	addr, draining := n.srv.Bound()
	bound := addr != ""
	listener := operator.Check{Name: "listener", OK: bound && !draining, Detail: "kafka listener on " + addr}
	switch {
	case draining:
		listener.Detail = "shutting down"
	case !bound:
		listener.Detail = "kafka listener not bound yet"
	}
	return []operator.Check{listener, n.clusterCheck(), n.queenCheck(ctx)}
}

func (n *Node) clusterCheck() operator.Check {
	c := operator.Check{Name: "cluster", OK: true, Detail: "single mode"}
	if n.cluster == nil {
		return c
	}
	s := n.cluster.session()
	switch {
	case s == nil:
		c.OK, c.Detail = false, fmt.Sprintf("claiming node id %d in cluster %q (a predecessor's registry row is waited out, or the registry is unreachable)", n.cfg.NodeID, n.cfg.Cluster)
	case s.Stats().Lost:
		c.OK, c.Detail = false, "node id lost to another process"
	default:
		c.Detail = fmt.Sprintf("node %d of cluster %q", n.cfg.NodeID, n.cfg.Cluster)
	}
	return c
}

func (n *Node) queenCheck(ctx context.Context) operator.Check {
	c := operator.Check{Name: "queen", OK: true}
	if n.cluster != nil {
		s := n.cluster.session()
		if s == nil {
			c.OK, c.Detail = false, "no heartbeat before the claim"
			return c
		}
		if err := s.Err(); err != nil {
			c.OK, c.Detail = false, err.Error()
			return c
		}
		c.Detail = fmt.Sprintf("last heartbeat sent %s ago", time.Since(s.Stats().LastOK).Round(time.Millisecond))
		return c
	}
	f := n.health.Failed()
	if f != nil || !n.health.Answered() {
		n.health.Probe(ctx, n.queen)
		f = n.health.Failed()
	}
	if f != nil {
		c.OK, c.Detail = false, fmt.Sprintf("%s failed (%s) %s ago", f.Route, f.Kind, time.Since(f.At).Round(time.Millisecond))
		return c
	}
	if !n.health.Answered() {
		c.OK, c.Detail = false, "no call to Queen answered since boot"
		return c
	}
	c.Detail = "last call answered"
	return c
}

// snapshot is the node's state for a scrape.
func (n *Node) snapshot() metrics.Snapshot {
	conns := n.srv.Connections()
	cs, ps, ts := n.coord.Stats(), n.sequencer.Stats(), n.txns.Stats()
	s := metrics.Snapshot{
		OpenConnections:   conns,
		Rebalances:        cs.Rebalances,
		Producers:         ps.Producers,
		SequenceWindows:   ps.Windows,
		ProducerEvictions: ps.EvictedProducers,
		WindowEvictions:   ps.EvictedWindows,
		ProducerIDsHeld:   n.producerIDs.Reserved(),
		TxnOpen:           ts.Open,
		TxnCommitted:      ts.Committed,
		TxnAborted:        ts.Aborted,
		DecodeBudget:      budgetUse(decoding.Budget()),
		FrameBudget:       budgetUse(n.srv.Frames),
		FetchBudget:       budgetUse(n.fetchMem),
		AnswerBudget:      budgetUse(n.answers),
	}
	fs := n.sessions.Stats()
	s.FetchSessions = metrics.FetchSessions{Sessions: fs.Sessions, Partitions: fs.Partitions, Evictions: fs.Evictions,
		Full: fs.Full, Incremental: fs.Incremental, Sessionless: fs.Sessionless,
		NotFound: fs.NotFound, InvalidEpoch: fs.InvalidEpoch, TopicIDError: fs.TopicIDError,
		Parked: n.parked.Parked(), ParkedLimit: n.parked.Limit()}
	for _, st := range cs.States {
		s.Groups = append(s.Groups, metrics.GroupState{State: st.State, Groups: st.Groups, Members: st.Members})
	}
	gs := n.groups.Stats()
	s.ConsumerGroups = metrics.ConsumerGroups{Rebalances: gs.Rebalances, MaxEpoch: gs.MaxEpoch, Assignments: gs.Assignments, AssignTime: gs.AssignTime}
	for _, st := range gs.States {
		s.ConsumerGroups.States = append(s.ConsumerGroups.States, metrics.GroupState{State: st.State, Groups: st.Groups, Members: st.Members})
	}
	if n.cluster != nil {
		c := &metrics.Cluster{}
		if sess := n.cluster.session(); sess != nil {
			st := sess.Stats()
			*c = metrics.Cluster{Joined: true, Healthy: st.Healthy, LiveNodes: st.LiveNodes, HeartbeatAge: time.Since(st.LastOK),
				HeartbeatsOK: st.HeartbeatsOK, HeartbeatsFailed: st.HeartbeatsFailed, Lost: st.Lost}
		}
		s.Cluster = c
	}
	return s
}

// budgetUse is what a scrape reports of b.
func budgetUse(b *budget.Budget) metrics.Budget {
	return metrics.Budget{InUse: b.Size() - b.Free(), Size: b.Size()}
}
