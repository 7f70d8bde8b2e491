// Package topology is what the facade tells a Kafka client about brokers
// and leadership: the broker list, the controller, the cluster id and each
// partition's leader and replicas, as Metadata, DescribeCluster,
// DescribeConfigs, CreateTopics and ApiVersions answer them. Layout is that
// answer; Single is single mode's (node 0 at the advertised address leads
// everything) and Cluster cluster mode's, read from the registry's live set
// (every live node a broker, rendezvous leaders over package hashring).
// ManualAssignment and ManualPartitions check a CreateTopics or
// CreatePartitions replica assignment against those brokers as Kafka's
// controller does.
//
// It takes narrow inputs: this node (registry.Node), the cluster name, and
// two functions of the registry session (its last view, and whether this
// node can vouch for its own membership). It must not reach for the node,
// its connections or its catalogue, the registry session itself, group
// ownership (package ownership and the coordinator), or the Kafka wire
// beyond the kmsg broker entries it hands out and the CreateTopics topic or
// CreatePartitions lists whose assignment it checks (the facade's width
// ceiling is the caller's).
package topology
