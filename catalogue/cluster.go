package catalogue

import (
	"context"
	"reflect"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen"
)

// ClusterSyncBudget bounds how long one request waits for the cluster-mode
// catalogue work below; past it the request is answered from the cached
// catalogue, as it would be within TTL. A Queen that hangs must not
// stall every Metadata for the Queen client's whole 10 s budget: clients
// need Metadata to keep producing and fetching through an outage.
const ClusterSyncBudget = time.Second

// Find is Lookup, except that in cluster mode a miss refreshes the
// catalogue with a listing that begins after the miss, and looks again. A
// topic created at another node a moment ago must be served here at once:
// a client is sent straight to the leader the hash ring names, and stock
// clients give up on UNKNOWN_TOPIC_OR_PARTITION after a few quick retries
// (kafka-go after none), far inside TTL. Single mode keeps the TTL
// alone, unchanged.
func (cat *Catalogue) Find(ctx context.Context, c Caller, topic string) (Topic, bool) {
	return cat.findRefreshing(ctx, c, func() (Topic, bool) { return cat.Lookup(topic) })
}

// MissRefreshFloor bounds the listings FindFresh's misses may cause: a
// client naming a topic that does not exist, however often, costs Queen at
// most one listing per interval per catalogue.
const MissRefreshFloor = 250 * time.Millisecond

// FindFresh is Find, except that in single mode too a miss looks again
// after a listing that began after asked (the request's arrival), unless a
// miss already caused one less than MissRefreshFloor ago. It serves the
// APIs naming a topic the client may have learned of elsewhere than from
// this node (OffsetCommit, TxnOffsetCommit): a topic created natively in
// Queen or through another facade must not be refused there until the TTL
// runs out.
func (cat *Catalogue) FindFresh(ctx context.Context, c Caller, topic string, asked time.Time) (Topic, bool) {
	look := func() (Topic, bool) { return cat.Lookup(topic) }
	t, ok := cat.findRefreshing(ctx, c, look)
	if ok || cat.deps.Clustered || !cat.claimMissRefresh(asked) {
		return t, ok
	}
	return cat.lookAfterListing(ctx, c, look)
}

// claimMissRefresh reports whether a miss of a request that arrived at
// asked is to refresh the catalogue: not when the listing held began after
// it arrived, nor within MissRefreshFloor of the last miss that did.
func (cat *Catalogue) claimMissRefresh(asked time.Time) bool {
	now := cat.deps.Now()
	cat.mu.Lock()
	defer cat.mu.Unlock()
	if cat.listedAt.After(asked) || (!cat.missAt.IsZero() && now.Sub(cat.missAt) < MissRefreshFloor) {
		return false
	}
	cat.missAt = now
	return true
}

// findRefreshing is look, and in cluster mode, on a miss, look again after
// a listing that begins after the miss.
func (cat *Catalogue) findRefreshing(ctx context.Context, c Caller, look func() (Topic, bool)) (Topic, bool) {
	t, ok := look()
	if ok || !cat.deps.Clustered {
		return t, ok
	}
	return cat.lookAfterListing(ctx, c, look)
}

// lookAfterListing is look after a listing that begins now, waited for at
// most ClusterSyncBudget.
func (cat *Catalogue) lookAfterListing(ctx context.Context, c Caller, look func() (Topic, bool)) (Topic, bool) {
	ctx, cancel := context.WithTimeout(ctx, ClusterSyncBudget)
	defer cancel()
	if err := cat.Ensure(ctx, c, true); err != nil {
		// The miss stands, as within the TTL; the caller's own refresh
		// already decided how a failing Queen is answered.
		return Topic{}, false
	}
	return look()
}

// SyncForMetadata brings the catalogue up to date for a cluster-mode
// Metadata request, whatever this node's last listing missed because the
// change was made at another node. A request for every topic is answered
// from a listing that begins after it arrived (coalesced with concurrent
// ones): a client that creates a topic through one node and then lists
// through another, as kafka-go's writer does, must find it. A request
// naming topics costs one KV read instead (syncNamed). Single mode keeps
// TTL alone.
func (cat *Catalogue) SyncForMetadata(ctx context.Context, c Caller, req *kmsg.MetadataRequest) {
	if !cat.deps.Clustered {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, ClusterSyncBudget)
	defer cancel()
	if req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0) {
		_ = cat.Ensure(ctx, c, true) // a failure leaves the cached listing to answer
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
// would within TTL anyway.
func (cat *Catalogue) syncNamed(ctx context.Context, c Caller, topics []kmsg.MetadataRequestTopic) {
	held := make(map[string]Topic, len(topics))
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
		if t, ok := cat.Lookup(name); ok {
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
		fresh := make(map[string]*Record, len(res[0].Rows))
		for _, row := range res[0].Rows {
			if cfg := decodeTopicCfg(row.Value); cfg != nil {
				fresh[topicOfCfgKey(row.Key)] = cfg
			}
		}
		for _, k := range chunk {
			name := topicOfCfgKey(k)
			t := held[name]
			cfg := fresh[name]
			if cfg != nil && !cfg.Matches(t.queue.ID) {
				cfg = nil // a leftover of a recreated queue, as refresh treats it
			}
			if !reflect.DeepEqual(cfg, t.cfg) {
				_ = cat.Ensure(ctx, c, true)
				return
			}
		}
	}
}

// syncKeysPerCall stays under Queen's 1024 keys per KV call.
const syncKeysPerCall = 1000

// WidenRefreshFloor bounds the listings knownPartition may cause: a request
// naming many partitions past a topic's width costs at most one per
// interval per catalogue.
const WidenRefreshFloor = 100 * time.Millisecond

// knownPartition reports whether partition p (≥ 0) of topic exists for a
// data-path request (Produce, Fetch, ListOffsets): below the width the
// request learned, or, in cluster mode, below the width after a refresh,
// because another node may have widened the topic since this node's last
// listing and the client, holding that node's fresh Metadata, was sent here
// as the leader. tv.Width is raised to what was learned. Single mode
// answers from tv alone, unchanged.
func (cs *Catalogues) knownPartition(ctx context.Context, c Caller, topic string, tv *Verdict, p int32) bool {
	if p < tv.Width {
		return true
	}
	if !cs.deps.Clustered || p >= MaxWidth {
		return false
	}
	cat := cs.For(c)
	cat.mu.RLock()
	recent := !cat.loadedAt.IsZero() && cs.deps.Now().Sub(cat.loadedAt) < WidenRefreshFloor
	cat.mu.RUnlock()
	if !recent {
		ctx, cancel := context.WithTimeout(ctx, ClusterSyncBudget)
		_ = cat.Ensure(ctx, c, true) // a failure leaves the refusal standing
		cancel()
	}
	if t, ok := cat.Lookup(topic); ok {
		tv.Width = max(tv.Width, cat.Width(t))
	}
	return p < tv.Width
}

// findByID is Find by topic id: the id may be of a topic another node
// created a moment ago.
func (cat *Catalogue) findByID(ctx context.Context, c Caller, id [16]byte) (Topic, bool) {
	if id == ([16]byte{}) {
		return Topic{}, false
	}
	return cat.findRefreshing(ctx, c, func() (Topic, bool) { return cat.lookupID(id) })
}
