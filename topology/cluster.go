package topology

import (
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/hashring"
	"github.com/queen-mq/queen-kafka/registry"
)

// Cluster is Metadata in cluster mode, read from the registry's
// last view: every live node is a broker at its own advertised address, the
// controller is the lowest live id, and each partition's leader is the
// rendezvous owner of that partition with every live node as a replica
// (leader first). Every node serves every partition from the one shared
// store, so leadership is an advertisement and a stale view costs a client
// a redirect, never data; that is why Metadata may answer from a view the
// registry no longer vouches for, while group ownership may not. The one
// exception is this node's own leadership: while it cannot vouch for its
// membership (its heartbeat failed or is stale), it advertises no partition
// as its own (see buildSnapshot).
type Cluster struct {
	self    registry.Node
	cluster string               // QUEEN_KAFKA_CLUSTER
	view    func() registry.View // the registry's last live set
	vouched func() bool          // whether this node may present itself as a member

	mu    sync.Mutex
	src   *hashring.Ring // the view's ring the snapshot was built from
	aside bool           // whether this node was set aside in it
	snap  *topoSnapshot
}

// topoSnapshot is everything one view implies, built once per membership
// change rather than once per partition.
type topoSnapshot struct {
	brokers    []kmsg.MetadataResponseBroker // ascending id, always including this node
	controller int32
	ring       *hashring.Ring // never empty
}

// NewCluster is the cluster topology of the node self in the cluster named
// cluster, read from view (the registry session's last live set) and
// vouched (whether this node's own membership is current, see
// buildSnapshot).
func NewCluster(self registry.Node, cluster string, view func() registry.View, vouched func() bool) *Cluster {
	return &Cluster{self: self, cluster: cluster, view: view, vouched: vouched}
}

func (t *Cluster) snapshot() *topoSnapshot {
	v := t.view()
	aside := !t.vouched()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.snap == nil || t.src != v.Ring || t.aside != aside {
		t.snap, t.src, t.aside = buildSnapshot(t.self, v, aside), v.Ring, aside
	}
	return t.snap
}

// buildSnapshot turns a view into brokers, controller and ring. This node
// is listed even when its own last view lacks it (the registry was briefly
// unhealthy, or the row expired and is being re-acquired): a client is
// never handed an empty broker list, and this node is reachable, since the
// client is talking to it. Leaders stay on the view's ring so that they
// agree with what the other nodes advertise; only an empty view falls back
// to this node alone. With aside (this node cannot vouch for its own
// membership) leaders are drawn from the ring without this node, when
// anyone else is on it: its peers drop it once its row expires, and a node
// whose KV calls hang cannot serve what needs them (a transactional
// Produce), so a client refreshing metadata here is sent to a survivor now
// rather than back to this node until the row's TTL runs out.
func buildSnapshot(self registry.Node, v registry.View, aside bool) *topoSnapshot {
	nodes := slices.Clone(v.Nodes)
	if _, ok := v.Node(self.ID); !ok {
		i, _ := slices.BinarySearchFunc(nodes, self.ID, func(n registry.Node, id int32) int { return int(n.ID) - int(id) })
		nodes = slices.Insert(nodes, i, self)
	}
	s := &topoSnapshot{brokers: make([]kmsg.MetadataResponseBroker, len(nodes))}
	for i, n := range nodes {
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID, b.Host, b.Port = n.ID, n.Host, int32(n.Port)
		s.brokers[i] = b
	}
	s.ring = v.Ring
	if aside && s.ring != nil && s.ring.Len() > 1 {
		s.ring = s.ring.Without(self.ID)
	}
	if s.ring == nil || s.ring.Len() == 0 {
		s.ring = hashring.New([]int32{self.ID})
	}
	s.controller, _ = s.ring.Controller()
	return s
}

func (t *Cluster) Brokers() []kmsg.MetadataResponseBroker {
	return slices.Clone(t.snapshot().brokers)
}

func (t *Cluster) ControllerID() int32 { return t.snapshot().controller }

func (t *Cluster) ClusterID() string { return t.cluster }

func (t *Cluster) SelfID() int32 { return t.self.ID }

func (t *Cluster) LeaderFor(topic string, p int32) (int32, []int32) {
	r := t.snapshot().ring
	leader, _ := r.Leader(topic, p)
	return leader, r.Replicas(topic, p)
}
