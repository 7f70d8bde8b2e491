package node

import (
	"context"
	"fmt"
	"log/slog"
	"maps"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/catalogue"
	"github.com/queen-mq/queen-kafka/configres"
	"github.com/queen-mq/queen-kafka/faults"
	"github.com/queen-mq/queen-kafka/transport"
)

// alterOutcome is one resource's answer to an alter.
type alterOutcome struct {
	code     int16
	msg      string
	throttle int32
}

// alterFault is one alter's answer to a refused topic write, logged on
// log (the connection's).
func alterFault(log *slog.Logger, name string, err error) alterOutcome {
	code, throttle, msg := faults.TopicWrite(err)
	log.Warn("alter topic config failed", "topic", name, "err", err)
	return alterOutcome{code: code, msg: msg, throttle: throttle}
}

// alterTopicConfig is the path AlterConfigs and IncrementalAlterConfigs
// share. Queen's configure route is a whole-row upsert (on older brokers)
// whose options cannot be read back, so an alter of retention is lossless
// only on a topic whose complete bag the facade itself posted: those are
// the only ones whose retention is altered, and the COMPLETE bag is posted
// again with the change, retentionEnabled stated explicitly. The facade's
// own keys (compression.type, max.message.bytes) touch no queue option, so
// they are altered on every topic, in its record alone.
func (n *Node) alterTopicConfig(ctx context.Context, c *transport.Conn, resType kmsg.ConfigResourceType, name string, validateOnly bool, change func(*catalogue.TopicConfig) error) alterOutcome {
	if resType != kmsg.ConfigResourceTypeTopic {
		return alterOutcome{code: kerr.InvalidRequest.Code, msg: fmt.Sprintf("Config resource type %s cannot be altered through this facade: its own settings are environment variables, and topics are the only resource it configures.", resType)}
	}
	if catalogue.TopicNameError(name) != "" || catalogue.InternalTopic(name) {
		return alterOutcome{code: kerr.UnknownTopicOrPartition.Code, msg: "This server does not host this topic-partition."}
	}
	cat := n.cats.For(callerOf(c))
	if err := cat.Ensure(ctx, callerOf(c), true); err != nil {
		return alterFault(c.Logger(), name, err)
	}
	info, ok := cat.Lookup(name)
	if !ok {
		return alterOutcome{code: kerr.UnknownTopicOrPartition.Code, msg: "This server does not host this topic-partition."}
	}
	q := c.Queen()
	rec, version, err := catalogue.ReadRecord(ctx, q, name)
	if err != nil {
		return alterFault(c.Logger(), name, err)
	}
	owned := facadeCreated(rec, info)
	if !owned && rec != nil && !rec.Matches(info.QueueID()) {
		rec = nil // another queue's leftover: overwritten, not inherited
	}
	k := catalogue.TopicConfigOf(rec)
	before := k.Retention()
	if err := change(&k); err != nil {
		return alterOutcome{code: kerr.InvalidConfig.Code, msg: err.Error()}
	}
	retained := k.Retention() == before
	if !owned && !retained {
		return alterOutcome{code: kerr.PolicyViolation.Code, msg: fmt.Sprintf("Topic %s was not created by CreateTopics through this facade (it was created natively, or on first use by Metadata), so its queue options cannot be read back and an alter of its retention here could not be lossless; change its retention through Queen's queue options instead (compression.type and max.message.bytes can be altered here).", name)}
	}
	if validateOnly {
		return alterOutcome{}
	}
	next := &catalogue.Record{QID: info.QID(), At: n.now().UnixMilli(), Kafka: k.KafkaMap()}
	if rec != nil {
		next.Set, next.Partitions = rec.Set, rec.Partitions
		if next.QID == nil {
			next.QID = rec.QID
		}
	}
	if owned && !retained {
		bag := maps.Clone(rec.Set)
		maps.Copy(bag, k.RetentionBag())
		if _, err := q.Configure(ctx, name, bag); err != nil {
			return alterFault(c.Logger(), name, err)
		}
		next.Set = bag
	}
	applied, _, err := catalogue.WriteRecord(ctx, q, name, next, version)
	if err != nil {
		return alterFault(c.Logger(), name, err)
	}
	if !applied {
		// Another alter landed between our read and write; its bag is the
		// one on record, ours is on the queue. Tell the client to retry so
		// the two agree again.
		return alterOutcome{code: kerr.RequestTimedOut.Code, msg: fmt.Sprintf("Topic %s was altered concurrently; retry.", name)}
	}
	cat.SetRecord(name, next)
	c.Logger().Info("topic config altered", "topic", name, "configs", next.Kafka, "retention", next.Set, "client_id", c.ClientID())
	return alterOutcome{}
}

// alterPreprocessed is one alter's outcome: the answer Kafka's preprocessing
// already gave the resource (configres.Preprocess), else change applied to
// the topic's configs.
func (n *Node) alterPreprocessed(ctx context.Context, c *transport.Conn, pre configres.Outcome, resType kmsg.ConfigResourceType, name string, validateOnly bool, change func(*catalogue.TopicConfig) error) alterOutcome {
	if pre.Done {
		return alterOutcome{code: pre.Code, msg: pre.Msg}
	}
	return n.alterTopicConfig(ctx, c, resType, name, validateOnly, change)
}
