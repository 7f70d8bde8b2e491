package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/catalogue"
	"github.com/queen-mq/queen-kafka/configres"
	"github.com/queen-mq/queen-kafka/faults"
	"github.com/queen-mq/queen-kafka/groupconfig"
	"github.com/queen-mq/queen-kafka/transport"
)

// handleAlterConfigs is the deprecated FULL-REPLACEMENT form, honoured
// literally: a key the request does not name returns to its default.
// A topic config name Kafka does not know is refused as Kafka refuses it.
// A GROUP resource's overrides are replaced whole the same way.
func (n *Node) handleAlterConfigs(ctx context.Context, c *transport.Conn, req *kmsg.AlterConfigsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	pre := configres.Preprocess(configres.LegacyResources(req.Resources), false, n.topo.SelfID())
	for i, r := range req.Resources {
		group := groupconfig.LegacyOps(r.Configs)
		out := n.alterPreprocessed(ctx, c, pre[i], r.ResourceType, r.ResourceName, req.ValidateOnly, group, groupconfig.ApplyLegacy, func(k *catalogue.TopicConfig) error {
			return k.Replace(r.Configs)
		})
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		rr.ErrorCode, rr.ErrorMessage = out.code, faults.ErrorMessage(out.code, out.msg)
		resp.ThrottleMillis = max(resp.ThrottleMillis, out.throttle)
		resp.Resources = append(resp.Resources, rr)
	}
	return resp, nil
}
