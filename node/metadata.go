package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/authz"
	"github.com/queen-mq/queen-kafka/catalogue"
	"github.com/queen-mq/queen-kafka/faults"
	"github.com/queen-mq/queen-kafka/transport"
)

// maxAutoCreates bounds the topics one Metadata request may create: the
// 101st is LEADER_NOT_AVAILABLE, the client retries, and the next request
// creates the next hundred.
const maxAutoCreates = 100

// handleMetadata answers brokers and topics from the topology and the
// catalogue, auto-creating named topics the client and the broker allow.
func (n *Node) handleMetadata(ctx context.Context, c *transport.Conn, req *kmsg.MetadataRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	defer metaAuthorizedOps(req, resp) // every answer below, once its topics are in
	resp.Brokers = n.topo.Brokers()
	cid := n.topo.ClusterID()
	resp.ClusterID = &cid
	resp.ControllerID = n.topo.ControllerID()

	cat := n.cats.For(callerOf(c))
	refreshErr := cat.Ensure(ctx, callerOf(c), false)
	if refreshErr != nil && !cat.Loaded() {
		code, throttle, _ := faults.Topic(refreshErr)
		resp.ThrottleMillis = throttle
		faults.Warn(c.Logger(), "metadata: topic list unavailable", "metadata: topic list unavailable", "err", refreshErr)
		for _, rt := range req.Topics {
			resp.Topics = append(resp.Topics, n.metaTopicError(rt.Topic, code))
		}
		return resp, nil
	}
	if refreshErr != nil {
		// The previous listing answers, and a 429 still reaches the client
		// as throttle_time_ms so that it backs off as asked.
		_, resp.ThrottleMillis, _ = faults.Topic(refreshErr)
		faults.Warn(c.Logger(), "metadata: previous topic list", "metadata: answering from the previous topic list", "err", refreshErr)
	}

	cat.SyncForMetadata(ctx, callerOf(c), req) // cluster mode only: another node may have created or widened a topic
	// v0 asks for every topic with an empty list; v1+ with a null one.
	if req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0) {
		n.metaAllTopics(c, cat, resp)
		return resp, nil
	}
	if req.Version < 12 && namesByIDOrNull(req) {
		// Kafka refuses the request: topic ids in requests begin at v12.
		for _, rt := range req.Topics {
			resp.Topics = append(resp.Topics, n.metaTopicError(rt.Topic, kerr.InvalidRequest.Code))
		}
		return resp, nil
	}

	allowCreate := (req.Version < 4 || req.AllowAutoTopicCreation) && n.cfg.AutoCreateTopics // Kafka's auto.create.topics.enable
	created, refreshed := 0, false
	var autoCreated []int // their answers' indexes, to give them ids
	for _, rt := range req.Topics {
		if rt.TopicID != ([16]byte{}) {
			// v12+: by id, whatever the name says; never created.
			resp.Topics = append(resp.Topics, n.metaTopicByID(ctx, c, rt.TopicID, &resp.ThrottleMillis))
			continue
		}
		if rt.Topic == nil {
			resp.Topics = append(resp.Topics, n.metaTopicError(rt.Topic, kerr.InvalidTopicException.Code))
			continue
		}
		name := *rt.Topic
		switch {
		case catalogue.TopicNameError(name) != "":
			resp.Topics = append(resp.Topics, n.metaTopicError(rt.Topic, kerr.InvalidTopicException.Code))
			continue
		case catalogue.InternalTopic(name):
			resp.Topics = append(resp.Topics, n.metaTopicError(rt.Topic, kerr.UnknownTopicOrPartition.Code))
			continue
		}
		if t, ok := cat.Find(ctx, callerOf(c), name); ok {
			resp.Topics = append(resp.Topics, n.metaTopic(name, cat.Width(t), t.ID()))
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
			if err := cat.Ensure(ctx, callerOf(c), true); err != nil {
				code, throttle, _ := faults.Topic(err)
				resp.ThrottleMillis = max(resp.ThrottleMillis, throttle)
				resp.Topics = append(resp.Topics, n.metaTopicError(rt.Topic, code))
				created = maxAutoCreates // no creates on a listing we could not refresh
				continue
			}
			if t, ok := cat.Lookup(name); ok {
				resp.Topics = append(resp.Topics, n.metaTopic(name, cat.Width(t), t.ID()))
				continue
			}
		}
		created++
		if _, err := c.Queen().Configure(ctx, name, n.queueOptions(nil)); err != nil {
			code, throttle, _ := faults.Topic(err)
			resp.ThrottleMillis = max(resp.ThrottleMillis, throttle)
			c.Logger().Warn("metadata: auto-create failed", "topic", name, "err", err)
			resp.Topics = append(resp.Topics, n.metaTopicError(rt.Topic, code))
			continue
		}
		c.Logger().Info("topic auto-created", "topic", name, "client_id", c.ClientID())
		cat.Added(name, nil)
		t, _ := cat.Lookup(name)
		autoCreated = append(autoCreated, len(resp.Topics))
		resp.Topics = append(resp.Topics, n.metaTopic(name, cat.Width(t), t.ID()))
	}
	if len(autoCreated) > 0 && req.Version >= 10 {
		n.idsOfCreated(ctx, c, cat, resp, autoCreated)
	}
	return resp, nil
}

// namesByIDOrNull reports whether a request names a topic by id or by a
// null name, which only v12+ may.
func namesByIDOrNull(req *kmsg.MetadataRequest) bool {
	for _, rt := range req.Topics {
		if rt.Topic == nil || rt.TopicID != ([16]byte{}) {
			return true
		}
	}
	return false
}

// metaTopicByID answers a topic requested by id: the topic, or Kafka's
// UNKNOWN_TOPIC_ID entry (null name, the id asked for). A failed catalogue
// read is answered as for a name.
func (n *Node) metaTopicByID(ctx context.Context, c *transport.Conn, id [16]byte, throttle *int32) kmsg.MetadataResponseTopic {
	name, width, ok, err := n.cats.ResolveID(ctx, callerOf(c), id)
	if err != nil {
		code, th, _ := faults.Topic(err)
		*throttle = max(*throttle, th)
		t := n.metaTopicError(nil, code)
		t.TopicID = id
		return t
	}
	if !ok {
		t := n.metaTopicError(nil, kerr.UnknownTopicID.Code)
		t.TopicID = id
		return t
	}
	return n.metaTopic(name, width, id)
}

// idsOfCreated gives the topics this request auto-created their ids: the
// queues exist now, so one listing names them. Without it the client
// learns the ids at its next Metadata; a failed listing leaves them zero
// (Kafka's "no id"), never a provisional id.
func (n *Node) idsOfCreated(ctx context.Context, c *transport.Conn, cat *catalogue.Catalogue, resp *kmsg.MetadataResponse, idx []int) {
	if err := cat.Ensure(ctx, callerOf(c), true); err != nil {
		return
	}
	for _, i := range idx {
		if id, ok := cat.TopicID(*resp.Topics[i].Topic); ok {
			resp.Topics[i].TopicID = id
		}
	}
}

// metaAllTopics lists every addressable topic, within the 200,000-partition
// budget: a short listing is something a client can act on, a connection
// reset is not.
func (n *Node) metaAllTopics(c *transport.Conn, cat *catalogue.Catalogue, resp *kmsg.MetadataResponse) {
	budget := catalogue.MaxListedPartitions
	omitted, omittedParts := 0, 0
	for _, t := range cat.List() {
		name := t.Name()
		if !catalogue.Addressable(name) {
			continue // a Kafka client cannot address it
		}
		w := cat.Width(t)
		if int(w) > budget {
			omitted++
			omittedParts += int(w)
			continue
		}
		budget -= int(w)
		resp.Topics = append(resp.Topics, n.metaTopic(name, w, t.ID()))
	}
	if omitted > 0 {
		c.Logger().Warn("metadata: all-topics listing cut at the partition budget", "omitted_topics", omitted, "omitted_partitions", omittedParts, "budget", catalogue.MaxListedPartitions)
	}
}

// metaTopic answers a topic: its id (encoded from v10; zero while this
// process created it and no listing has named it yet), its partitions.
func (n *Node) metaTopic(name string, width int32, id [16]byte) kmsg.MetadataResponseTopic {
	t := kmsg.NewMetadataResponseTopic()
	t.Topic = &name
	t.TopicID = id
	t.Partitions = make([]kmsg.MetadataResponseTopicPartition, width)
	for i := range t.Partitions {
		p := &t.Partitions[i]
		p.Default()
		p.Partition = int32(i)
		p.Leader, p.Replicas = n.topo.LeaderFor(name, p.Partition)
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

// metaAuthorizedOps answers what v8+ asks: each topic's authorized
// operations, and (v8-v10) the cluster's, every operation of the resource
// as Kafka with no authorizer answers (package authz).
func metaAuthorizedOps(req *kmsg.MetadataRequest, resp *kmsg.MetadataResponse) {
	if req.Version < 8 {
		return
	}
	if req.Version <= 10 {
		resp.AuthorizedOperations = authz.Ops(req.IncludeClusterAuthorizedOperations, authz.Cluster)
	}
	if req.IncludeTopicAuthorizedOperations {
		for i := range resp.Topics {
			resp.Topics[i].AuthorizedOperations = authz.Topic
		}
	}
}
