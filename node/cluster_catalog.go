package node

import (
	"context"
	"reflect"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/transport"
)

// clusterSyncBudget bounds how long one request waits for the cluster-mode
// catalogue work below; past it the request is answered from the cached
// catalogue, as it would be within catalogTTL. A Queen that hangs must not
// stall every Metadata for the Queen client's whole 10 s budget: clients
// need Metadata to keep producing and fetching through an outage.
const clusterSyncBudget = time.Second

// find is lookup, except that in cluster mode a miss refreshes the
// catalogue with a listing that begins after the miss, and looks again. A
// topic created at another node a moment ago must be served here at once:
// a client is sent straight to the leader the hash ring names, and stock
// clients give up on UNKNOWN_TOPIC_OR_PARTITION after a few quick retries
// (kafka-go after none), far inside catalogTTL. Single mode keeps the TTL
// alone, unchanged.
func (cat *catalog) find(ctx context.Context, c *transport.Conn, topic string) (topicInfo, bool) {
	return cat.findRefreshing(ctx, c, func() (topicInfo, bool) { return cat.lookup(topic) })
}

// findRefreshing is look, and in cluster mode, on a miss, look again after
// a listing that begins after the miss.
func (cat *catalog) findRefreshing(ctx context.Context, c *transport.Conn, look func() (topicInfo, bool)) (topicInfo, bool) {
	t, ok := look()
	if ok || !cat.deps.clustered {
		return t, ok
	}
	ctx, cancel := context.WithTimeout(ctx, clusterSyncBudget)
	defer cancel()
	if err := cat.ensure(ctx, c, true); err != nil {
		// The miss stands; the caller's own refresh already decided how a
		// failing Queen is answered.
		return topicInfo{}, false
	}
	return look()
}

// syncForMetadata brings the catalogue up to date for a cluster-mode
// Metadata request, whatever this node's last listing missed because the
// change was made at another node. A request for every topic is answered
// from a listing that begins after it arrived (coalesced with concurrent
// ones): a client that creates a topic through one node and then lists
// through another, as kafka-go's writer does, must find it. A request
// naming topics costs one KV read instead (syncNamed). Single mode keeps
// catalogTTL alone.
func (cat *catalog) syncForMetadata(ctx context.Context, c *transport.Conn, req *kmsg.MetadataRequest) {
	if !cat.deps.clustered {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, clusterSyncBudget)
	defer cancel()
	if req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0) {
		_ = cat.ensure(ctx, c, true) // a failure leaves the cached listing to answer
		return
	}
	cat.syncNamed(ctx, c, req.Topics)
}

// syncNamed brings the catalogue up to date for the topics a cluster-mode
// Metadata request names (by name, or by an id it holds) and the catalogue
// already holds: their topic
// records are read (one KV call per thousand names) and, when any differs
// from the cached one — another node widened the topic, declared its width
// or changed its configs since this node's last listing — the catalogue is
// refreshed with a listing that begins after this request arrived. So every
// node's next Metadata reports a widening made at any node, as a broker's
// does. A failed read changes nothing: the cached answer stands, as it
// would within catalogTTL anyway.
func (cat *catalog) syncNamed(ctx context.Context, c *transport.Conn, topics []kmsg.MetadataRequestTopic) {
	held := make(map[string]topicInfo, len(topics))
	var keys []string
	for _, rt := range topics {
		var name string
		switch {
		case rt.TopicID != ([16]byte{}): // v12+ by id: the topic the id names here
			n, ok := cat.TopicByID(rt.TopicID)
			if !ok {
				continue // findByID refreshes on the miss
			}
			name = n
		case rt.Topic != nil:
			name = *rt.Topic
		default:
			continue
		}
		if t, ok := cat.lookup(name); ok {
			if _, dup := held[name]; !dup {
				held[name] = t
				keys = append(keys, queen.TopicCfgKey(name))
			}
		}
	}
	q := cat.queenFor(c)
	for len(keys) > 0 {
		chunk := keys[:min(len(keys), syncKeysPerCall)]
		keys = keys[len(chunk):]
		res, err := q.KV(ctx, []queen.KVOp{{Op: queen.OpGetMany, NS: queen.Namespace, Keys: chunk}})
		if err != nil || len(res) != 1 || res[0].Truncated {
			return
		}
		fresh := make(map[string]*topicCfg, len(res[0].Rows))
		for _, row := range res[0].Rows {
			if cfg := decodeTopicCfg(row.Value); cfg != nil {
				fresh[topicOfCfgKey(row.Key)] = cfg
			}
		}
		for _, k := range chunk {
			name := topicOfCfgKey(k)
			t := held[name]
			cfg := fresh[name]
			if cfg != nil && !cfg.matches(t.queue.ID) {
				cfg = nil // a leftover of a recreated queue, as refresh treats it
			}
			if !reflect.DeepEqual(cfg, t.cfg) {
				_ = cat.ensure(ctx, c, true)
				return
			}
		}
	}
}

// syncKeysPerCall stays under Queen's 1024 keys per KV call.
const syncKeysPerCall = 1000

// widenRefreshFloor bounds the listings knownPartition may cause: a request
// naming many partitions past a topic's width costs at most one per
// interval per catalogue.
const widenRefreshFloor = 100 * time.Millisecond

// knownPartition reports whether partition p (≥ 0) of topic exists for a
// data-path request (Produce, Fetch, ListOffsets): below the width the
// request learned, or, in cluster mode, below the width after a refresh,
// because another node may have widened the topic since this node's last
// listing and the client, holding that node's fresh Metadata, was sent here
// as the leader. tv.width is raised to what was learned. Single mode
// answers from tv alone, unchanged.
func (cs *catalogs) knownPartition(ctx context.Context, c *transport.Conn, topic string, tv *topicVerdict, p int32) bool {
	if p < tv.width {
		return true
	}
	if !cs.deps.clustered || p >= maxAdvertisedWidth {
		return false
	}
	cat := cs.forConn(c)
	cat.mu.RLock()
	recent := !cat.loadedAt.IsZero() && cs.deps.now().Sub(cat.loadedAt) < widenRefreshFloor
	cat.mu.RUnlock()
	if !recent {
		ctx, cancel := context.WithTimeout(ctx, clusterSyncBudget)
		_ = cat.ensure(ctx, c, true) // a failure leaves the refusal standing
		cancel()
	}
	if t, ok := cat.lookup(topic); ok {
		tv.width = max(tv.width, cat.width(t))
	}
	return p < tv.width
}

// findByID is find by topic id: the id may be of a topic another node
// created a moment ago.
func (cat *catalog) findByID(ctx context.Context, c *transport.Conn, id [16]byte) (topicInfo, bool) {
	if id == ([16]byte{}) {
		return topicInfo{}, false
	}
	return cat.findRefreshing(ctx, c, func() (topicInfo, bool) { return cat.lookupID(id) })
}
