package node

import "github.com/twmb/franz-go/pkg/kmsg"

// topology is what Metadata (and FindCoordinator) says about brokers and
// leadership. Single mode is one broker, node 0, this process; cluster mode
// supplies the live node set and a rendezvous leader per partition.
type topology interface {
	// brokers lists every broker a client may be told about.
	brokers() []kmsg.MetadataResponseBroker
	// controllerID is the broker reported as controller.
	controllerID() int32
	// clusterID is the cluster_id clients see.
	clusterID() string
	// selfID is this node's broker id as brokers lists it.
	selfID() int32
	// leaderFor is partition p's leader and its replica set (also the ISR).
	leaderFor(topic string, p int32) (leader int32, replicas []int32)
}

// singleTopology is single mode: node 0 at the advertised address leads
// everything, whatever the Queen deployment behind it looks like.
type singleTopology struct {
	host    string // QUEEN_KAFKA_ADVERTISED_ADDR
	port    int32
	cluster string // QUEEN_KAFKA_CLUSTER
}

// singleReplicas is shared by every partition; encoders only read it.
var singleReplicas = []int32{0}

func (t singleTopology) brokers() []kmsg.MetadataResponseBroker {
	b := kmsg.NewMetadataResponseBroker()
	b.NodeID = 0
	b.Host = t.host
	b.Port = t.port
	return []kmsg.MetadataResponseBroker{b}
}

func (singleTopology) controllerID() int32 { return 0 }

func (t singleTopology) clusterID() string { return t.cluster }

func (singleTopology) selfID() int32 { return 0 }

func (singleTopology) leaderFor(string, int32) (int32, []int32) { return 0, singleReplicas }
