package node

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/catalogue"
	"github.com/queen-mq/queen-kafka/faults"
	"github.com/queen-mq/queen-kafka/topology"
	"github.com/queen-mq/queen-kafka/transport"
)

// handleCreatePartitions widens topics. A Queen queue declares no width,
// so widening is raising the floor recorded under qk:topiccfg:, which the
// next Metadata reports. A decrease and an equal count are refused with
// Apache Kafka's own sentences; a manual assignment is checked as Kafka's
// controller checks it and, when accepted, places nothing (every partition
// is led by the broker Metadata names).
func (n *Node) handleCreatePartitions(ctx context.Context, c *transport.Conn, req *kmsg.CreatePartitionsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	cat := n.cats.For(callerOf(c))
	refreshErr := cat.Ensure(ctx, callerOf(c), true)
	seen := make(map[string]int, len(req.Topics))
	for _, t := range req.Topics {
		seen[t.Topic]++
	}
	for _, t := range req.Topics {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic = t.Topic
		var code int16
		var msg string
		switch {
		case seen[t.Topic] > 1:
			code, msg = kerr.InvalidRequest.Code, "Duplicate topic name."
		case refreshErr != nil:
			var throttle int32
			code, throttle, msg = faults.Topic(refreshErr)
			resp.ThrottleMillis = max(resp.ThrottleMillis, throttle)
		default:
			var throttle int32
			code, msg, throttle = n.widenTopic(ctx, c, cat, t, req.ValidateOnly)
			resp.ThrottleMillis = max(resp.ThrottleMillis, throttle)
		}
		// An empty message is null on the wire, as Kafka's message-less
		// UnknownTopicOrPartitionException is.
		rt.ErrorCode = code
		if msg != "" {
			rt.ErrorMessage = faults.ErrorMessage(code, msg)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (n *Node) widenTopic(ctx context.Context, c *transport.Conn, cat *catalogue.Catalogue, t kmsg.CreatePartitionsRequestTopic, validateOnly bool) (int16, string, int32) {
	// Kafka's controller throws UnknownTopicOrPartitionException() with no
	// message for a topic it does not have: the answer's message is null.
	if catalogue.TopicNameError(t.Topic) != "" || catalogue.InternalTopic(t.Topic) {
		return kerr.UnknownTopicOrPartition.Code, "", 0
	}
	info, ok := cat.Lookup(t.Topic)
	if !ok {
		return kerr.UnknownTopicOrPartition.Code, "", 0
	}
	cur := cat.Width(info)
	switch {
	case t.Count < cur:
		return kerr.InvalidPartitions.Code, fmt.Sprintf("The topic %s currently has %d partition(s); %d would not be an increase.", t.Topic, cur, t.Count), 0
	case t.Count == cur:
		return kerr.InvalidPartitions.Code, fmt.Sprintf("Topic already has %d partition(s).", cur), 0
	case t.Count > catalogue.MaxWidth:
		return kerr.InvalidPartitions.Code, fmt.Sprintf("Number of partitions %d is above this facade's ceiling of %d per topic.", t.Count, catalogue.MaxWidth), 0
	case len(t.Assignment) > 0:
		// The factor of the partitions before is what Metadata lists as
		// their replicas.
		_, replicas := n.topo.LeaderFor(t.Topic, 0)
		if code, msg := topology.ManualPartitions(t.Assignment, t.Count-cur, n.topo.Brokers(), len(replicas)); code != 0 {
			return code, msg, 0
		}
	}
	if validateOnly {
		return 0, "", 0
	}
	rec, err := n.raiseFloor(ctx, c, info, t.Count)
	if err != nil {
		code, throttle, msg := faults.TopicWrite(err)
		c.Logger().Warn("create partitions failed", "topic", t.Topic, "err", err)
		return code, msg, throttle
	}
	cat.SetRecord(t.Topic, rec)
	c.Logger().Info("topic widened", "topic", t.Topic, "from", cur, "to", t.Count, "client_id", c.ClientID())
	return 0, "", 0
}

// raiseFloor writes the topic's new width into its record, keeping the rest
// of the record. A record written concurrently is re-read once.
func (n *Node) raiseFloor(ctx context.Context, c *transport.Conn, info catalogue.Topic, width int32) (*catalogue.Record, error) {
	q := c.Queen()
	for attempt := 0; ; attempt++ {
		rec, version, err := catalogue.ReadRecord(ctx, q, info.Name())
		if err != nil {
			return nil, err
		}
		if rec == nil || !rec.Matches(info.QueueID()) {
			// A floor-only record: no configure bag was ever posted for this
			// queue, so it stays a topic the alter APIs refuse.
			rec = &catalogue.Record{QID: info.QID()}
		}
		rec.Partitions, rec.At = width, n.now().UnixMilli()
		applied, _, err := catalogue.WriteRecord(ctx, q, info.Name(), rec, version)
		if err != nil {
			return nil, err
		}
		if applied {
			return rec, nil
		}
		if attempt == 1 {
			return nil, fmt.Errorf("topic record of %s changed twice while being widened", info.Name())
		}
	}
}
