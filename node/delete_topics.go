package node

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/catalogue"
	"github.com/queen-mq/queen-kafka/faults"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/transport"
)

// handleDeleteTopics drops each named queue, and then its qk:topiccfg
// record and every group's committed offsets of it (Queen's delete leaves
// the KV store alone).
func (n *Node) handleDeleteTopics(ctx context.Context, c *transport.Conn, req *kmsg.DeleteTopicsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	cat := n.cats.For(callerOf(c))
	answer := func(name *string, id [16]byte, code int16, msg string, throttle int32) {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID = name, id
		resp.ThrottleMillis = max(resp.ThrottleMillis, throttle)
		rt.ErrorCode, rt.ErrorMessage = code, faults.ErrorMessage(code, msg)
		resp.Topics = append(resp.Topics, rt)
	}
	if req.Version < 6 {
		for _, name := range req.TopicNames {
			code, msg, throttle := n.deleteTopic(ctx, c, cat, name)
			answer(kmsg.StringPtr(name), [16]byte{}, code, msg, throttle)
		}
		return resp, nil
	}
	// A listing begun after the request: Queen deletes by name, so an id
	// must resolve to the queue that has it now, not to a name a stale
	// catalogue still gives a deleted id (which would delete its
	// successor). It also gives the ids of topics named by name; a failure
	// leaves those zero and answers ids from the cached listing.
	_ = cat.Ensure(ctx, callerOf(c), true)
	for _, t := range req.Topics {
		byID := t.TopicID != ([16]byte{})
		switch {
		case t.Topic != nil && byID:
			answer(t.Topic, t.TopicID, kerr.InvalidRequest.Code, "You may not specify both topic name and topic id.", 0)
		case t.Topic != nil:
			id, _ := cat.TopicID(*t.Topic)
			code, msg, throttle := n.deleteTopic(ctx, c, cat, *t.Topic)
			if code != 0 {
				id = [16]byte{}
			}
			answer(t.Topic, id, code, msg, throttle)
		case !byID:
			answer(nil, [16]byte{}, kerr.InvalidRequest.Code, "Neither topic name nor id were specified.", 0)
		default:
			// Queen deletes by name: the name the id resolves to now.
			name, _, ok, err := n.cats.ResolveID(ctx, callerOf(c), t.TopicID)
			if err != nil {
				code, throttle, msg := faults.TopicWrite(err)
				c.Logger().Warn("delete topic by id: topic list unavailable", "err", err)
				answer(nil, t.TopicID, code, msg, throttle)
				continue
			}
			if !ok {
				answer(nil, t.TopicID, kerr.UnknownTopicID.Code, catalogue.UnknownTopicIDMsg, 0)
				continue
			}
			code, msg, throttle := n.deleteTopic(ctx, c, cat, name)
			answer(kmsg.StringPtr(name), t.TopicID, code, msg, throttle)
		}
	}
	return resp, nil
}

func (n *Node) deleteTopic(ctx context.Context, c *transport.Conn, cat *catalogue.Catalogue, name string) (int16, string, int32) {
	if !catalogue.Addressable(name) {
		return kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("There is no queue named %q: it is not a name a Kafka topic can have here.", name), 0
	}
	res, err := c.Queen().DeleteQueue(ctx, name)
	if err != nil {
		code, throttle, msg := faults.TopicWrite(err)
		c.Logger().Warn("delete topic failed", "topic", name, "err", err)
		return code, msg, throttle
	}
	cat.Removed(name)
	// The record goes whether or not the queue existed: a leftover record
	// must not give a future queue of this name a floor it never declared.
	if _, err := c.Queen().KV(ctx, []queen.KVOp{{Op: queen.OpDelete, NS: queen.Namespace, Key: queen.TopicCfgKey(name)}}); err != nil {
		c.Logger().Warn("topic record not deleted; a queue recreated under this name ignores it by its id", "topic", name, "err", err)
	}
	// So do the groups' committed offsets, for the same reason: a queue
	// recreated under this name restarts at offset 0, and an old group
	// resuming at its old positions would skip the new records silently.
	if removed, err := n.coord.DeleteTopicOffsets(ctx, n.groupClient(c), name); err != nil {
		c.Logger().Warn("committed offsets of the deleted topic not all removed; a group may resume a recreated topic at stale offsets", "topic", name, "removed", removed, "err", err)
	} else if removed > 0 {
		c.Logger().Info("committed offsets of the deleted topic removed", "topic", name, "offsets", removed)
	}
	if !res.Deleted {
		return kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("There is no queue named %q, so there is no topic to delete.", name), 0
	}
	c.Logger().Info("topic deleted", "topic", name, "client_id", c.ClientID())
	return 0, "", 0
}
