package node

import (
	"context"
	"time"
)

// missRefreshAfter bounds how often a miss may force a catalogue refresh in
// cluster mode: a stream of requests for a topic that does not exist costs
// Queen at most one queue listing per interval.
const missRefreshAfter = 250 * time.Millisecond

// find is lookup, except that in cluster mode a miss on a listing older
// than missRefreshAfter refreshes the catalogue once and looks again. A
// topic created at another node a moment ago must be served here at once:
// a client is sent straight to the leader the hash ring names, and stock
// clients give up on UNKNOWN_TOPIC_OR_PARTITION after a few quick retries,
// far inside catalogTTL. Single mode keeps the TTL alone, unchanged.
func (cat *catalog) find(ctx context.Context, c *Conn, topic string) (topicInfo, bool) {
	t, ok := cat.lookup(topic)
	if ok || cat.n.cluster == nil {
		return t, ok
	}
	cat.mu.RLock()
	fresh := !cat.loadedAt.IsZero() && cat.n.now().Sub(cat.loadedAt) < missRefreshAfter
	cat.mu.RUnlock()
	if fresh {
		return topicInfo{}, false
	}
	if err := cat.ensure(ctx, c, true); err != nil {
		// The miss stands; the caller's own refresh already decided how a
		// failing Queen is answered.
		return topicInfo{}, false
	}
	return cat.lookup(topic)
}
