package groupconfig

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/faults"
)

// Describe answers into rr the GROUP resource r as Kafka's ConfigHelper
// does: every group config (or those r names; an unknown name is left
// out), each with its value and source, its synonyms when asked (the
// group's override, then the broker setting behind it, then Kafka's
// default) and its documentation when asked. The row is read afresh, so an
// alter made at any node shows at once. An empty group name is
// INVALID_REQUEST. The answer's throttle is returned.
func (s *Store) Describe(ctx context.Context, kv KV, r kmsg.DescribeConfigsRequestResource, synonyms, docs bool, rr *kmsg.DescribeConfigsResponseResource) int32 {
	if r.ResourceName == "" {
		msg := "Group name must not be empty"
		rr.ErrorCode, rr.ErrorMessage = kerr.InvalidRequest.Code, &msg
		return 0
	}
	overrides, err := s.Overrides(ctx, kv, r.ResourceName)
	if err != nil {
		code, throttle, msg := faults.Topic(err)
		rr.ErrorCode, rr.ErrorMessage = code, &msg
		return throttle
	}
	rr.Configs = s.broker.Entries(overrides, r.ConfigNames, synonyms, docs)
	return 0
}

// Entries is the DescribeConfigs entries of a group whose overrides are
// overrides, sorted by name; names, when not empty, selects among them.
func (b Broker) Entries(overrides map[string]string, names []string, synonyms, docs bool) []kmsg.DescribeConfigsResponseResourceConfig {
	out := []kmsg.DescribeConfigsResponseResourceConfig{}
	sorted := slices.Clone(defs)
	slices.SortFunc(sorted, func(a, b def) int {
		if a.name < b.name {
			return -1
		}
		return 1
	})
	for _, d := range sorted {
		if len(names) > 0 && !slices.Contains(names, d.name) {
			continue
		}
		type layer struct {
			name, value string
			source      kmsg.ConfigSource
		}
		var layers []layer
		if v, ok := overrides[d.name]; ok {
			if c, err := canonical(d, v); err == nil {
				v = c
			}
			layers = append(layers, layer{d.name, v, kmsg.ConfigSourceGroupConfig})
		}
		switch {
		case d.brokerSynonym == "":
			layers = append(layers, layer{d.name, d.dflt, kmsg.ConfigSourceDefaultConfig})
		case b[d.name].Static:
			layers = append(layers, layer{d.brokerSynonym, b.dflt(d), kmsg.ConfigSourceStaticBrokerConfig},
				layer{d.brokerSynonym, kafkaDefault(d), kmsg.ConfigSourceDefaultConfig})
		default:
			layers = append(layers, layer{d.brokerSynonym, b.dflt(d), kmsg.ConfigSourceDefaultConfig})
		}
		e := kmsg.NewDescribeConfigsResponseResourceConfig()
		e.Name, e.ConfigType = d.name, d.typ
		v := layers[0].value
		e.Value, e.Source = &v, layers[0].source
		e.IsDefault = e.Source == kmsg.ConfigSourceDefaultConfig
		if synonyms {
			for _, l := range layers {
				syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				syn.Name, syn.Value, syn.Source = l.name, &l.value, l.source
				e.ConfigSynonyms = append(e.ConfigSynonyms, syn)
			}
		}
		if docs {
			doc := d.doc
			e.Documentation = &doc
		}
		out = append(out, e)
	}
	return out
}
