package topology

import "github.com/twmb/franz-go/pkg/kmsg"

// Layout is what Metadata (and FindCoordinator) says about brokers and
// leadership. Single mode is one broker, node 0, this process; cluster mode
// supplies the live node set and a rendezvous leader per partition.
type Layout interface {
	// Brokers lists every broker a client may be told about.
	Brokers() []kmsg.MetadataResponseBroker
	// ControllerID is the broker reported as controller.
	ControllerID() int32
	// ClusterID is the cluster_id clients see.
	ClusterID() string
	// SelfID is this node's broker id as Brokers lists it.
	SelfID() int32
	// LeaderFor is partition p's leader and its replica set (also the ISR).
	LeaderFor(topic string, p int32) (leader int32, replicas []int32)
}

// Single is single mode: node 0 at the advertised address leads
// everything, whatever the Queen deployment behind it looks like.
type Single struct {
	Host    string // QUEEN_KAFKA_ADVERTISED_ADDR
	Port    int32
	Cluster string // QUEEN_KAFKA_CLUSTER
}

// singleReplicas is shared by every partition; encoders only read it.
var singleReplicas = []int32{0}

func (t Single) Brokers() []kmsg.MetadataResponseBroker {
	b := kmsg.NewMetadataResponseBroker()
	b.NodeID = 0
	b.Host = t.Host
	b.Port = t.Port
	return []kmsg.MetadataResponseBroker{b}
}

func (Single) ControllerID() int32 { return 0 }

func (t Single) ClusterID() string { return t.Cluster }

func (Single) SelfID() int32 { return 0 }

func (Single) LeaderFor(string, int32) (int32, []int32) { return 0, singleReplicas }
