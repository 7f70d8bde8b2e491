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

// handleIncrementalAlterConfigs is what `kafka-configs.sh --alter` sends:
// a topic's configs (catalogue.TopicConfig.ApplyIncremental) or a group's
// (package groupconfig), each resource checked by configres.Preprocess first.
func (n *Node) handleIncrementalAlterConfigs(ctx context.Context, c *transport.Conn, req *kmsg.IncrementalAlterConfigsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	pre := configres.Preprocess(configres.IncrementalResources(req.Resources), true, n.topo.SelfID())
	for i, r := range req.Resources {
		group := groupconfig.IncrementalOps(r.Configs)
		out := n.alterPreprocessed(ctx, c, pre[i], r.ResourceType, r.ResourceName, req.ValidateOnly, group, groupconfig.ApplyIncremental, func(k *catalogue.TopicConfig) error {
			for _, cfg := range r.Configs {
				if err := k.ApplyIncremental(cfg); err != nil {
					return err
				}
			}
			return nil
		})
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		rr.ErrorCode, rr.ErrorMessage = out.code, faults.ErrorMessage(out.code, out.msg)
		resp.ThrottleMillis = max(resp.ThrottleMillis, out.throttle)
		resp.Resources = append(resp.Resources, rr)
	}
	return resp, nil
}
