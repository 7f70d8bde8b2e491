package node

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen"
)

// The two topic configs the facade can name an enforcer for: Queen's queue
// retention. Every other Kafka config is accepted at CreateTopics and not
// applied, and therefore never reported by DescribeConfigs.
const (
	cfgRetentionMs   = "retention.ms"
	cfgCleanupPolicy = "cleanup.policy"
)

// topicConfigKeys is the describe order.
var topicConfigKeys = []string{cfgCleanupPolicy, cfgRetentionMs}

// kafkaTopicConfig is a topic's Kafka-side view of its retention.
type kafkaTopicConfig struct {
	retentionMs int64  // -1 keeps every record
	policy      string // delete, compact, or compact,delete
	explicit    map[string]bool
}

func defaultTopicConfig() kafkaTopicConfig {
	return kafkaTopicConfig{retentionMs: -1, policy: "delete", explicit: map[string]bool{}}
}

func supportedTopicConfig(name string) bool {
	return name == cfgRetentionMs || name == cfgCleanupPolicy
}

// set applies one supported key; the error is the INVALID_CONFIG message.
func (k *kafkaTopicConfig) set(name, value string) error {
	switch name {
	case cfgRetentionMs:
		ms, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
		switch {
		case err != nil:
			return fmt.Errorf("Invalid value %s for configuration retention.ms: Not a number of type LONG", value)
		case ms == -1 || ms >= 1000:
			k.retentionMs = ms
		case ms >= 0:
			return fmt.Errorf("Invalid value %d for configuration retention.ms: below one second it would round to no retention at all; use -1 to keep every record, or 1000 and more", ms)
		default:
			return fmt.Errorf("Invalid value %d for configuration retention.ms: expected -1 or at least 1000", ms)
		}
	case cfgCleanupPolicy:
		p, ok := normalPolicy(value)
		if !ok {
			return fmt.Errorf("Invalid value %s for configuration cleanup.policy: expected delete, compact or compact,delete", value)
		}
		k.policy = p
	default:
		return fmt.Errorf("Unknown topic config name: %s", name)
	}
	k.explicit[name] = true
	return nil
}

// reset returns a key to its default (IncrementalAlterConfigs DELETE, and
// every key AlterConfigs does not name).
func (k *kafkaTopicConfig) reset(name string) {
	d := defaultTopicConfig()
	switch name {
	case cfgRetentionMs:
		k.retentionMs = d.retentionMs
	case cfgCleanupPolicy:
		k.policy = d.policy
	}
	delete(k.explicit, name)
}

func normalPolicy(v string) (string, bool) {
	var del, compact bool
	for _, p := range strings.Split(v, ",") {
		switch strings.ToLower(strings.TrimSpace(p)) {
		case "delete":
			del = true
		case "compact":
			compact = true
		default:
			return "", false
		}
	}
	switch {
	case del && compact:
		return "compact,delete", true
	case compact:
		return "compact", true
	default:
		return "delete", true
	}
}

// value is a key's current textual value.
func (k kafkaTopicConfig) value(name string) string {
	if name == cfgRetentionMs {
		return strconv.FormatInt(k.retentionMs, 10)
	}
	return k.policy
}

// retentionBag is the queue options this config maps to. compact alone
// keeps every record whatever retention.ms says, because Queen does not
// compact and the last value of every key has to stay. retentionEnabled is
// always stated, never left to a default.
func (k kafkaTopicConfig) retentionBag() map[string]any {
	secs := int64(0)
	if k.retentionMs >= 1000 {
		secs = k.retentionMs / 1000
	}
	enabled := secs > 0 && strings.Contains(k.policy, "delete")
	return map[string]any{"retentionEnabled": enabled, "retentionSeconds": secs}
}

// kafkaMap is what the record keeps: the keys explicitly set.
func (k kafkaTopicConfig) kafkaMap() map[string]string {
	out := make(map[string]string, len(k.explicit))
	for name := range k.explicit {
		out[name] = k.value(name)
	}
	return out
}

// topicConfigOf reads a record's Kafka map; a value that no longer parses
// is taken as unset (§12: unreadable records are treated as absent).
func topicConfigOf(rec *topicCfg) kafkaTopicConfig {
	k := defaultTopicConfig()
	if rec == nil {
		return k
	}
	for _, name := range topicConfigKeys {
		if v, ok := rec.Kafka[name]; ok {
			_ = k.set(name, v)
		}
	}
	return k
}

var configDocs = map[string]string{
	cfgRetentionMs:   "Enforced by Queen's queue retention (retentionEnabled, retentionSeconds = floor(ms/1000)): records older than this are deleted in the background, whole segments at a time, and the log start offset advances. -1 keeps every record.",
	cfgCleanupPolicy: "delete lets retention.ms delete by age. Queen does not compact: compact keeps every record whatever retention.ms says, and compact,delete deletes by age and compacts nothing.",
}

var configTypes = map[string]kmsg.ConfigType{cfgRetentionMs: kmsg.ConfigTypeLong, cfgCleanupPolicy: kmsg.ConfigTypeList}

// describeEntries renders k's keys (filtered by names when not empty).
func describeEntries(k kafkaTopicConfig, names []string, synonyms, docs bool) []kmsg.DescribeConfigsResponseResourceConfig {
	want := func(string) bool { return true }
	if len(names) > 0 {
		set := make(map[string]bool, len(names))
		for _, n := range names {
			set[n] = true
		}
		want = func(n string) bool { return set[n] }
	}
	out := []kmsg.DescribeConfigsResponseResourceConfig{}
	for _, name := range topicConfigKeys {
		if !want(name) {
			continue
		}
		e := kmsg.NewDescribeConfigsResponseResourceConfig()
		e.Name = name
		v := k.value(name)
		e.Value = &v
		e.Source = kmsg.ConfigSourceDefaultConfig
		if k.explicit[name] {
			e.Source = kmsg.ConfigSourceDynamicTopicConfig
		}
		e.IsDefault = !k.explicit[name]
		e.ConfigType = configTypes[name]
		if synonyms {
			syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			syn.Name, syn.Value, syn.Source = name, &v, e.Source
			e.ConfigSynonyms = append(e.ConfigSynonyms, syn)
			if k.explicit[name] {
				d := defaultTopicConfig().value(name)
				def := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				def.Name, def.Value, def.Source = name, &d, kmsg.ConfigSourceDefaultConfig
				e.ConfigSynonyms = append(e.ConfigSynonyms, def)
			}
		}
		if docs {
			d := configDocs[name]
			e.Documentation = &d
		}
		out = append(out, e)
	}
	return out
}

// readTopicCfg reads one qk:topiccfg: record and its version (0: absent).
func readTopicCfg(ctx context.Context, q *queen.Client, topic string) (*topicCfg, int64, error) {
	res, err := q.KV(ctx, []queen.KVOp{{Op: queen.OpGetMany, NS: queen.Namespace, Keys: []string{queen.TopicCfgKey(topic)}}})
	if err != nil {
		return nil, 0, fmt.Errorf("read topic record of %s: %w", topic, err)
	}
	r := res[0]
	if r.Truncated && len(r.Rows) == 0 {
		return nil, 0, fmt.Errorf("read topic record of %s: truncated", topic)
	}
	if len(r.Rows) == 0 {
		return nil, 0, nil
	}
	// An unreadable record is absent, but its version still guards the
	// overwrite.
	return decodeTopicCfg(r.Rows[0].Value), r.Rows[0].Version, nil
}

// decodeTopicCfg reads one record's value; an unreadable one is nil, since
// unreadable records are treated as absent (§12).
func decodeTopicCfg(v json.RawMessage) *topicCfg {
	var cfg topicCfg
	if json.Unmarshal(v, &cfg) != nil {
		return nil
	}
	return &cfg
}

// topicOfCfgKey is the topic a qk:topiccfg: key names.
func topicOfCfgKey(key string) string { return strings.TrimPrefix(key, queen.PrefixTopicCfg) }

// putTopicCfgOp is the write of a record, conditional on expect.
func putTopicCfgOp(topic string, cfg *topicCfg, expect int64) (queen.KVOp, error) {
	v, err := json.Marshal(cfg)
	if err != nil {
		return queen.KVOp{}, fmt.Errorf("encode topic record of %s: %w", topic, err)
	}
	return queen.KVOp{Op: queen.OpPut, NS: queen.Namespace, Key: queen.TopicCfgKey(topic), Value: v, Forever: true, Expect: &expect}, nil
}

// writeTopicCfg writes a record if its version is still expect; applied
// false means somebody else wrote it first.
func writeTopicCfg(ctx context.Context, q *queen.Client, topic string, cfg *topicCfg, expect int64) (bool, int64, error) {
	op, err := putTopicCfgOp(topic, cfg, expect)
	if err != nil {
		return false, 0, err
	}
	res, err := q.KV(ctx, []queen.KVOp{op})
	if err != nil {
		return false, 0, fmt.Errorf("write topic record of %s: %w", topic, err)
	}
	return res[0].Applied, res[0].Version, nil
}
