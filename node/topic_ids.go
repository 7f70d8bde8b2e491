package node

import (
	"context"

	"github.com/google/uuid"

	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/transport"
)

// Topic ids (KIP-516). A topic's id is its Queen queue's id from the queue
// listing (queen-api §2): a queue deleted and recreated under the same name
// gets a new id, so a client holding the old one learns the topic was
// recreated, as with Kafka. Where the listing carries no id for a queue,
// the id is derived from the name (derivedTopicID), stable across nodes and
// restarts; such a topic keeps its id when recreated (README, Deviations).
//
// A topic this process created or deleted but the listing does not show
// yet has no id (the zero UUID, Kafka's "none"), never a provisional one: a
// client seeing a topic's id change takes the topic as recreated and fails
// its produce and fetch of it (franz-go does), so an id, once given, is the
// queue's for as long as the queue lives.

// topicIDNamespace is the UUIDv5 namespace of derived topic ids: the SHA-1
// of "queen-kafka topic id" in the URL namespace, fixed forever.
var topicIDNamespace = uuid.NewSHA1(uuid.NameSpaceURL, []byte("queen-kafka topic id"))

// queueTopicID is the topic id of a listed queue: the queue's own id when
// it is a non-nil UUID; a UUIDv5 of the id when Queen gives an id that is
// not one (the contract calls it opaque), which still changes when the
// queue is recreated; a UUIDv5 of the name when Queen gives none.
func queueTopicID(q queen.QueueInfo) [16]byte {
	if q.ID == "" {
		return derivedTopicID("name:" + q.Name)
	}
	if u, err := uuid.Parse(q.ID); err == nil && u != uuid.Nil {
		return u
	}
	return derivedTopicID("id:" + q.ID)
}

// derivedTopicID is the UUIDv5 of key in topicIDNamespace: never the nil
// UUID, since its version and variant bits are set.
func derivedTopicID(key string) [16]byte {
	return uuid.NewSHA1(topicIDNamespace, []byte(key))
}

// TopicID is the id of topic as this catalogue last saw it; false when the
// topic is unknown or not listed since this process created it.
func (cat *catalog) TopicID(topic string) ([16]byte, bool) {
	t, ok := cat.lookup(topic)
	if !ok || t.id == ([16]byte{}) {
		return [16]byte{}, false
	}
	return t.id, true
}

// TopicByID is the name of the topic with id as this catalogue last saw
// it; false when no listed topic has it (UNKNOWN_TOPIC_ID).
func (cat *catalog) TopicByID(id [16]byte) (string, bool) {
	if id == ([16]byte{}) {
		return "", false
	}
	cat.mu.RLock()
	defer cat.mu.RUnlock()
	name, ok := cat.byID[id]
	return name, ok
}

// topicByID is the name and advertised width of the topic with id, for a
// data-path or admin request naming topics by id (Produce v13, Fetch v13+,
// DeleteTopics v6, Metadata v12): the catalogue is refreshed as for
// topicWidth and, in cluster mode, once more on a miss (findByID). ok is
// false for an id no live topic has: the caller answers UNKNOWN_TOPIC_ID.
// err is the Queen failure when no listing at all could be had.
func (cs *catalogs) topicByID(ctx context.Context, c *transport.Conn, id [16]byte) (name string, width int32, ok bool, err error) {
	cat := cs.forConn(c)
	if err := cat.ensure(ctx, c, false); err != nil && !cat.loaded() {
		return "", 0, false, err
	}
	t, ok := cat.findByID(ctx, c, id)
	if !ok || !addressable(t.queue.Name) {
		return "", 0, false, nil
	}
	return t.queue.Name, cat.width(t), true, nil
}

// addressable reports whether a Kafka client can name a queue as a topic:
// Metadata lists no other, so no other has an id a client could know.
func addressable(name string) bool {
	return !internalTopic(name) && topicNameError(name) == ""
}

// lookupID is lookup by id.
func (cat *catalog) lookupID(id [16]byte) (topicInfo, bool) {
	name, ok := cat.TopicByID(id)
	if !ok {
		return topicInfo{}, false
	}
	t, ok := cat.lookup(name)
	if !ok || t.id != id {
		return topicInfo{}, false
	}
	return t, true
}

// indexIDs rebuilds byID from topics; the caller holds mu.
func (cat *catalog) indexIDs() {
	cat.byID = make(map[[16]byte]string, len(cat.topics))
	for name, t := range cat.topics {
		if t.id != ([16]byte{}) {
			cat.byID[t.id] = name
		}
	}
}
