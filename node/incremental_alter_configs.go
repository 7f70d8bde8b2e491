package node

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/catalogue"
	"github.com/queen-mq/queen-kafka/configres"
	"github.com/queen-mq/queen-kafka/faults"
	"github.com/queen-mq/queen-kafka/transport"
)

// handleIncrementalAlterConfigs is what `kafka-configs.sh --alter` sends:
// SET and DELETE on every applied key, APPEND and SUBTRACT on the
// list-typed cleanup.policy, each applied to the topic's recorded configs.
func (n *Node) handleIncrementalAlterConfigs(ctx context.Context, c *transport.Conn, req *kmsg.IncrementalAlterConfigsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	pre := configres.Preprocess(configres.IncrementalResources(req.Resources), true, n.topo.SelfID())
	for i, r := range req.Resources {
		out := n.alterPreprocessed(ctx, c, pre[i], r.ResourceType, r.ResourceName, req.ValidateOnly, func(k *catalogue.TopicConfig) error {
			for _, cfg := range r.Configs {
				if err := applyIncremental(k, cfg); err != nil {
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

func applyIncremental(k *catalogue.TopicConfig, cfg kmsg.IncrementalAlterConfigsRequestResourceConfig) error {
	if !catalogue.SupportedTopicConfig(cfg.Name) {
		return unappliedConfig(cfg.Name)
	}
	value := ""
	if cfg.Value != nil {
		value = *cfg.Value
	}
	switch cfg.Op {
	case kmsg.IncrementalAlterConfigOpSet:
		if cfg.Value == nil {
			return fmt.Errorf("Null value not supported for : %s", cfg.Name)
		}
		return k.Set(cfg.Name, value)
	case kmsg.IncrementalAlterConfigOpDelete:
		k.Reset(cfg.Name)
		return nil
	case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
		if cfg.Name != catalogue.CleanupPolicy {
			verb := "append"
			if cfg.Op == kmsg.IncrementalAlterConfigOpSubtract {
				verb = "subtract"
			}
			return fmt.Errorf("Config value %s is not allowed for config key: %s", verb, cfg.Name)
		}
		items := map[string]bool{}
		for _, p := range strings.Split(k.Policy(), ",") {
			items[p] = true
		}
		for _, v := range strings.Split(value, ",") {
			v = strings.ToLower(strings.TrimSpace(v))
			if v == "" {
				continue
			}
			items[v] = cfg.Op == kmsg.IncrementalAlterConfigOpAppend
		}
		var list []string
		for p, on := range items {
			if on {
				list = append(list, p)
			}
		}
		if len(list) == 0 {
			return fmt.Errorf("Invalid value for configuration cleanup.policy: removing %s would leave it empty", value)
		}
		return k.Set(catalogue.CleanupPolicy, strings.Join(list, ","))
	}
	return fmt.Errorf("Unknown alter config operation %d for %s", cfg.Op, cfg.Name)
}

// unappliedConfig refuses a key the facade does not apply: accepting it
// would report a setting that nothing enforces.
func unappliedConfig(name string) error {
	return fmt.Errorf("Config %s is not applied by this facade: only retention.ms and cleanup.policy (Queen queue options), compression.type (fetch answers) and max.message.bytes (produce) are", name)
}
