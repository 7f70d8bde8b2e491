package node

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/catalogue"
	"github.com/queen-mq/queen-kafka/configres"
	"github.com/queen-mq/queen-kafka/faults"
	"github.com/queen-mq/queen-kafka/groupconfig"
	"github.com/queen-mq/queen-kafka/transport"
)

// alterOutcome is one resource's answer to an alter.
type alterOutcome struct {
	code     int16
	msg      string
	throttle int32
}

// alterPreprocessed is one alter's outcome: the answer Kafka's preprocessing
// already gave the resource (configres.Preprocess), else a GROUP resource's
// ops applied to its overrides by apply (package groupconfig), else change
// applied to the topic's configs.
func (n *Node) alterPreprocessed(ctx context.Context, c *transport.Conn, pre configres.Outcome, resType kmsg.ConfigResourceType, name string, validateOnly bool, ops []groupconfig.Op, apply func(map[string]string, []groupconfig.Op) (map[string]string, error), change func(*catalogue.TopicConfig) error) alterOutcome {
	if pre.Done {
		return alterOutcome{code: pre.Code, msg: pre.Msg}
	}
	if resType == kmsg.ConfigResourceTypeGroupConfig {
		o := n.groupCfg.Alter(ctx, c.Queen(), name, ops, apply, validateOnly)
		return alterOutcome{code: o.Code, msg: o.Msg, throttle: o.Throttle}
	}
	if resType != kmsg.ConfigResourceTypeTopic {
		return alterOutcome{code: kerr.InvalidRequest.Code, msg: fmt.Sprintf("Config resource type %s cannot be altered through this facade: its own settings are environment variables, and topics and groups are the only resources it configures.", resType)}
	}
	code, msg, next, err := n.cats.AlterTopicConfig(ctx, callerOf(c), name, validateOnly, n.now(), change)
	if err != nil {
		code, throttle, msg := faults.TopicWrite(err)
		c.Logger().Warn("alter topic config failed", "topic", name, "err", err)
		return alterOutcome{code: code, msg: msg, throttle: throttle}
	}
	if next != nil {
		c.Logger().Info("topic config altered", "topic", name, "configs", next.Kafka, "retention", next.Set, "client_id", c.ClientID())
	}
	return alterOutcome{code: code, msg: msg}
}
