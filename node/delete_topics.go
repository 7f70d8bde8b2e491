package node

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen"
)

// handleDeleteTopics drops each named queue, and then its qk:topiccfg
// record and every group's committed offsets of it (Queen's delete leaves
// the KV store alone).
func (n *Node) handleDeleteTopics(ctx context.Context, c *Conn, req *kmsg.DeleteTopicsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	cat := n.cats.forConn(c)
	for _, name := range req.TopicNames {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic = kmsg.StringPtr(name)
		code, msg, throttle := n.deleteTopic(ctx, c, cat, name)
		resp.ThrottleMillis = max(resp.ThrottleMillis, throttle)
		rt.ErrorCode, rt.ErrorMessage = code, errorMessage(code, msg)
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (n *Node) deleteTopic(ctx context.Context, c *Conn, cat *catalog, name string) (int16, string, int32) {
	if topicNameError(name) != "" || internalTopic(name) {
		return kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("There is no queue named %q: it is not a name a Kafka topic can have here.", name), 0
	}
	res, err := c.Queen().DeleteQueue(ctx, name)
	if err != nil {
		code, throttle, msg := topicWriteFault(err)
		c.log.Warn("delete topic failed", "topic", name, "err", err)
		return code, msg, throttle
	}
	cat.removed(name)
	// The record goes whether or not the queue existed: a leftover record
	// must not give a future queue of this name a floor it never declared.
	if _, err := c.Queen().KV(ctx, []queen.KVOp{{Op: queen.OpDelete, NS: queen.Namespace, Key: queen.TopicCfgKey(name)}}); err != nil {
		c.log.Warn("topic record not deleted; a queue recreated under this name ignores it by its id", "topic", name, "err", err)
	}
	// So do the groups' committed offsets, for the same reason: a queue
	// recreated under this name restarts at offset 0, and an old group
	// resuming at its old positions would skip the new records silently.
	if removed, err := n.coord.DeleteTopicOffsets(ctx, c.groupClient(), name); err != nil {
		c.log.Warn("committed offsets of the deleted topic not all removed; a group may resume a recreated topic at stale offsets", "topic", name, "removed", removed, "err", err)
	} else if removed > 0 {
		c.log.Info("committed offsets of the deleted topic removed", "topic", name, "offsets", removed)
	}
	if !res.Deleted {
		return kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("There is no queue named %q, so there is no topic to delete.", name), 0
	}
	c.log.Info("topic deleted", "topic", name, "client_id", c.ClientID())
	return 0, "", 0
}
