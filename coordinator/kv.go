package coordinator

import (
	"github.com/queen-mq/queen-kafka/queen"
)

// KV is the one Queen route the coordinator needs (§7). *queen.Client
// satisfies it. It is queen.KVCaller itself, so that the consumer-group
// interface (ConsumerGroups) passes it on as the same type.
type KV = queen.KVCaller

// Client is who sent a request: what DescribeGroups reports about a member,
// the identity that keys the group registry (two tenants' "orders" are two
// groups), the credential its KV calls carry, and the topics this node
// serves it.
type Client struct {
	ID       string   // the request header's client_id
	Host     string   // the peer as Kafka reports it, e.g. "/127.0.0.1"
	Identity string   // "" is the node's own credential
	KV       KV       // nil uses the coordinator's KV
	Topics   Topics   // nil serves every partition
	IDs      TopicIDs // names topics by id (OffsetCommit and OffsetFetch v10)
}

// MaxMetadataBytes is the longest offset metadata a commit may carry.
const MaxMetadataBytes = 4096

// Per-call limits of the contract (§7.3, §10).
const (
	maxOpsPerCall   = 256
	readKeysPerCall = 128 // getMany keys and getPrefix page size for offsets
	indexPageLimit  = 1000
)
