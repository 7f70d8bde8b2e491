package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxAutoCreates bounds the topics one Metadata request may create: the
// 101st is LEADER_NOT_AVAILABLE, the client retries, and the next request
// creates the next hundred.
const maxAutoCreates = 100

// handleMetadata answers brokers and topics from the topology and the
// catalogue, auto-creating named topics the client allows it to.
func (n *Node) handleMetadata(ctx context.Context, c *Conn, req *kmsg.MetadataRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	resp.Brokers = n.topo.brokers()
	cid := n.topo.clusterID()
	resp.ClusterID = &cid
	resp.ControllerID = n.topo.controllerID()

	cat := n.cats.forConn(c)
	refreshErr := cat.ensure(ctx, c, false)
	if refreshErr != nil && !cat.loaded() {
		code, throttle, _ := topicFault(refreshErr)
		resp.ThrottleMillis = throttle
		c.log.Warn("metadata: topic list unavailable", "err", refreshErr)
		for _, rt := range req.Topics {
			resp.Topics = append(resp.Topics, n.metaTopicError(rt.Topic, code))
		}
		return resp, nil
	}
	if refreshErr != nil {
		// The previous listing answers, and a 429 still reaches the client
		// as throttle_time_ms so that it backs off as asked.
		_, resp.ThrottleMillis, _ = topicFault(refreshErr)
		c.log.Warn("metadata: answering from the previous topic list", "err", refreshErr)
	}

	cat.syncForMetadata(ctx, c, req) // cluster mode only: another node may have created or widened a topic
	// v0 asks for every topic with an empty list; v1+ with a null one.
	if req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0) {
		n.metaAllTopics(c, cat, resp)
		return resp, nil
	}

	allowCreate := req.Version < 4 || req.AllowAutoTopicCreation
	created, refreshed := 0, false
	for _, rt := range req.Topics {
		if rt.Topic == nil {
			resp.Topics = append(resp.Topics, n.metaTopicError(rt.Topic, kerr.InvalidTopicException.Code))
			continue
		}
		name := *rt.Topic
		switch {
		case topicNameError(name) != "":
			resp.Topics = append(resp.Topics, n.metaTopicError(rt.Topic, kerr.InvalidTopicException.Code))
			continue
		case internalTopic(name):
			resp.Topics = append(resp.Topics, n.metaTopicError(rt.Topic, kerr.UnknownTopicOrPartition.Code))
			continue
		}
		if t, ok := cat.find(ctx, c, name); ok {
			resp.Topics = append(resp.Topics, n.metaTopic(name, cat.width(t)))
			continue
		}
		if !allowCreate {
			resp.Topics = append(resp.Topics, n.metaTopicError(rt.Topic, kerr.UnknownTopicOrPartition.Code))
			continue
		}
		if created >= maxAutoCreates {
			resp.Topics = append(resp.Topics, n.metaTopicError(rt.Topic, kerr.LeaderNotAvailable.Code))
			continue
		}
		if !refreshed {
			// Configure only what a fresh listing lacks: a queue created a
			// moment ago elsewhere must not be configured again.
			refreshed = true
			if err := cat.ensure(ctx, c, true); err != nil {
				code, throttle, _ := topicFault(err)
				resp.ThrottleMillis = max(resp.ThrottleMillis, throttle)
				resp.Topics = append(resp.Topics, n.metaTopicError(rt.Topic, code))
				created = maxAutoCreates // no creates on a listing we could not refresh
				continue
			}
			if t, ok := cat.lookup(name); ok {
				resp.Topics = append(resp.Topics, n.metaTopic(name, cat.width(t)))
				continue
			}
		}
		created++
		if _, err := c.Queen().Configure(ctx, name, n.queueOptions(nil)); err != nil {
			code, throttle, _ := topicFault(err)
			resp.ThrottleMillis = max(resp.ThrottleMillis, throttle)
			c.log.Warn("metadata: auto-create failed", "topic", name, "err", err)
			resp.Topics = append(resp.Topics, n.metaTopicError(rt.Topic, code))
			continue
		}
		c.log.Info("topic auto-created", "topic", name, "client_id", c.ClientID())
		cat.added(name, nil)
		t, _ := cat.lookup(name)
		resp.Topics = append(resp.Topics, n.metaTopic(name, cat.width(t)))
	}
	return resp, nil
}

// metaAllTopics lists every addressable topic, within the 200,000-partition
// budget: a short listing is something a client can act on, a connection
// reset is not.
func (n *Node) metaAllTopics(c *Conn, cat *catalog, resp *kmsg.MetadataResponse) {
	budget := maxListedPartitions
	omitted, omittedParts := 0, 0
	for _, t := range cat.list() {
		name := t.queue.Name
		if internalTopic(name) || topicNameError(name) != "" {
			continue // a Kafka client cannot address it
		}
		w := cat.width(t)
		if int(w) > budget {
			omitted++
			omittedParts += int(w)
			continue
		}
		budget -= int(w)
		resp.Topics = append(resp.Topics, n.metaTopic(name, w))
	}
	if omitted > 0 {
		c.log.Warn("metadata: all-topics listing cut at the partition budget", "omitted_topics", omitted, "omitted_partitions", omittedParts, "budget", maxListedPartitions)
	}
}

func (n *Node) metaTopic(name string, width int32) kmsg.MetadataResponseTopic {
	t := kmsg.NewMetadataResponseTopic()
	t.Topic = &name
	t.Partitions = make([]kmsg.MetadataResponseTopicPartition, width)
	for i := range t.Partitions {
		p := &t.Partitions[i]
		p.Default()
		p.Partition = int32(i)
		p.Leader, p.Replicas = n.topo.leaderFor(name, p.Partition)
		p.ISR = p.Replicas
		p.LeaderEpoch = -1
	}
	return t
}

func (n *Node) metaTopicError(name *string, code int16) kmsg.MetadataResponseTopic {
	t := kmsg.NewMetadataResponseTopic()
	t.Topic = name
	t.ErrorCode = code
	return t
}
