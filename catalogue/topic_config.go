package catalogue

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/recordbatch"
)

// The topic configs the facade can name an enforcer for. retention.ms and
// cleanup.policy map onto Queen's queue retention, so only a topic whose
// queue options the facade posted has them. compression.type and
// max.message.bytes are the facade's own, applied on every topic: the codec
// of its fetch answers and the batch size its produce admits. Every other
// topic config Kafka knows is validated as Kafka validates it, stored and
// reported, and not applied (stored_config.go); a name Kafka does not know
// is refused as Kafka refuses it.
const (
	cfgRetentionMs = "retention.ms"
	CleanupPolicy  = "cleanup.policy"
	cfgCompression = "compression.type"
	cfgMaxMessage  = "max.message.bytes"
)

// TopicConfigKeys is the describe order; FacadeConfigKeys are the ones
// every topic has.
var (
	TopicConfigKeys  = []string{CleanupPolicy, cfgCompression, cfgMaxMessage, cfgRetentionMs}
	FacadeConfigKeys = []string{cfgCompression, cfgMaxMessage}
)

// Kafka's defaults of the facade's own keys. compression.type=producer
// keeps a producer's codec on Kafka; here it answers uncompressed, since a
// stored record does not remember the codec it came in.
const (
	compressionProducer    = "producer"
	defaultMaxMessageBytes = 1048588 // 1 MiB plus a batch's 12-byte log overhead
)

// compressionValues is what compression.type accepts, in Kafka's order.
const compressionValues = "uncompressed, zstd, lz4, snappy, gzip, producer"

// TopicConfig is a topic's Kafka-side configs.
type TopicConfig struct {
	retentionMs     int64  // -1 keeps every record
	policy          string // delete, compact, or compact,delete
	compression     string // a compression.type value; while not explicit, QUEEN_KAFKA_FETCH_COMPRESSION applies
	maxMessageBytes int32
	stored          map[string]string // storedKeys set, as Kafka describes them
	explicit        map[string]bool
}

// DefaultTopicConfig is a topic's configs with no key set.
func DefaultTopicConfig() TopicConfig {
	return TopicConfig{retentionMs: -1, policy: "delete", compression: compressionProducer, maxMessageBytes: defaultMaxMessageBytes, stored: map[string]string{}, explicit: map[string]bool{}}
}

// SupportedTopicConfig reports whether name is a key the facade applies.
func SupportedTopicConfig(name string) bool {
	return slices.Contains(TopicConfigKeys, name)
}

// Set applies or stores one key; the error is the INVALID_CONFIG message.
func (k *TopicConfig) Set(name, value string) error {
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
	case CleanupPolicy:
		p, ok := normalPolicy(value)
		if !ok {
			return fmt.Errorf("Invalid value %s for configuration cleanup.policy: expected delete, compact or compact,delete", value)
		}
		k.policy = p
	case cfgCompression:
		if _, ok := recordbatch.CodecByName(value); !ok && value != compressionProducer {
			return fmt.Errorf("Invalid value %s for configuration compression.type: String must be one of: %s", value, compressionValues)
		}
		k.compression = value
	case cfgMaxMessage:
		b, err := strconv.ParseInt(strings.TrimSpace(value), 10, 32)
		switch {
		case err != nil:
			return fmt.Errorf("Invalid value %s for configuration max.message.bytes: Not a number of type INT", value)
		case b < 0:
			return fmt.Errorf("Invalid value %d for configuration max.message.bytes: Value must be at least 0", b)
		}
		k.maxMessageBytes = int32(b)
	default:
		sk, ok := storedKeys[name]
		if !ok {
			return fmt.Errorf("Unknown topic config name: %s", name)
		}
		v, err := sk.check(name, value)
		if err != nil {
			return err
		}
		k.stored[name] = v
	}
	k.explicit[name] = true
	return nil
}

// Reset returns a key to its default (IncrementalAlterConfigs DELETE, and
// every key AlterConfigs does not name).
func (k *TopicConfig) Reset(name string) {
	d := DefaultTopicConfig()
	switch name {
	case cfgRetentionMs:
		k.retentionMs = d.retentionMs
	case CleanupPolicy:
		k.policy = d.policy
	case cfgCompression:
		k.compression = d.compression
	case cfgMaxMessage:
		k.maxMessageBytes = d.maxMessageBytes
	}
	delete(k.stored, name)
	delete(k.explicit, name)
}

// Retention is the part of k that maps onto the queue's options, to tell
// whether an alter changes it.
func (k TopicConfig) Retention() [4]any {
	return [4]any{k.retentionMs, k.policy, k.explicit[cfgRetentionMs], k.explicit[CleanupPolicy]}
}

// FetchCodec is the codec of a Fetch answer at version for a topic
// configured k, with def the facade's QUEEN_KAFKA_FETCH_COMPRESSION.
// uncompressed and producer answer uncompressed. Below the version a codec
// needs (zstd: v10) the answer is uncompressed too: Kafka refuses such a
// fetch UNSUPPORTED_COMPRESSION_TYPE because its log holds zstd batches it
// will not convert, but an answer here is encoded afresh, so the consumer
// is served rather than stalled.
func (k TopicConfig) FetchCodec(def int, version int16) int {
	c := def
	if k.explicit[cfgCompression] {
		c, _ = recordbatch.CodecByName(k.compression) // producer: CodecNone
	}
	if version < recordbatch.MinFetchVersion(c) {
		return recordbatch.CodecNone
	}
	return c
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

// Value is a key's current textual value.
func (k TopicConfig) Value(name string) string {
	if _, ok := storedKeys[name]; ok {
		return k.stored[name] // "" unset: described only once set
	}
	switch name {
	case cfgRetentionMs:
		return strconv.FormatInt(k.retentionMs, 10)
	case cfgCompression:
		return k.compression
	case cfgMaxMessage:
		return strconv.FormatInt(int64(k.maxMessageBytes), 10)
	}
	return k.policy
}

// MaxMessageBytes is max.message.bytes: the largest batch a Produce may
// carry.
func (k TopicConfig) MaxMessageBytes() int32 { return k.maxMessageBytes }

// Policy is cleanup.policy's value.
func (k TopicConfig) Policy() string { return k.policy }

// RetentionBag is the queue options this config maps to. compact alone
// keeps every record whatever retention.ms says, because Queen does not
// compact and the last value of every key has to stay. retentionEnabled is
// always stated, never left to a default.
func (k TopicConfig) RetentionBag() map[string]any {
	secs := int64(0)
	if k.retentionMs >= 1000 {
		secs = k.retentionMs / 1000
	}
	enabled := secs > 0 && strings.Contains(k.policy, "delete")
	return map[string]any{"retentionEnabled": enabled, "retentionSeconds": secs}
}

// KafkaMap is what the record keeps: the keys explicitly set.
func (k TopicConfig) KafkaMap() map[string]string {
	out := make(map[string]string, len(k.explicit))
	for name := range k.explicit {
		out[name] = k.Value(name)
	}
	return out
}

// TopicConfigOf reads a record's Kafka map; a value that no longer parses
// is taken as unset (§12: unreadable records are treated as absent).
func TopicConfigOf(rec *Record) TopicConfig {
	k := DefaultTopicConfig()
	if rec == nil {
		return k
	}
	for name, v := range rec.Kafka {
		_ = k.Set(name, v)
	}
	return k
}

var configDocs = map[string]string{
	cfgRetentionMs: "Enforced by Queen's queue retention (retentionEnabled, retentionSeconds = floor(ms/1000)): records older than this are deleted in the background, whole segments at a time, and the log start offset advances. -1 keeps every record.",
	CleanupPolicy:  "delete lets retention.ms delete by age. Queen does not compact: compact keeps every record whatever retention.ms says, and compact,delete deletes by age and compacts nothing.",
	cfgCompression: "The codec of this topic's Fetch answers: gzip, snappy, lz4 or zstd (zstd from Fetch v10; older fetchers get uncompressed batches). uncompressed and producer answer uncompressed, since a stored record does not keep its producer's codec. Unset, QUEEN_KAFKA_FETCH_COMPRESSION applies. Stored records are never changed.",
	cfgMaxMessage:  "The largest record batch a Produce may carry, counted as Kafka counts it (the whole batch as sent, compressed, with its 12-byte log overhead); a larger one is refused MESSAGE_TOO_LARGE.",
}

var configTypes = map[string]kmsg.ConfigType{cfgRetentionMs: kmsg.ConfigTypeLong, CleanupPolicy: kmsg.ConfigTypeList, cfgCompression: kmsg.ConfigTypeString, cfgMaxMessage: kmsg.ConfigTypeInt}

// DescribeEntries renders k's keys among keys (filtered by names when not
// empty). An unset compression.type reports the facade's default codec
// (fetchDefault) as the static broker config it stands for, or Kafka's
// default producer when that is none.
func DescribeEntries(k TopicConfig, fetchDefault int, keys, names []string, synonyms, docs bool) []kmsg.DescribeConfigsResponseResourceConfig {
	want := func(string) bool { return true }
	if len(names) > 0 {
		set := make(map[string]bool, len(names))
		for _, n := range names {
			set[n] = true
		}
		want = func(n string) bool { return set[n] }
	}
	out := []kmsg.DescribeConfigsResponseResourceConfig{}
	all := slices.Clone(keys)
	for _, name := range StoredConfigKeys {
		if k.explicit[name] { // an unset one has no value anything keeps
			all = append(all, name)
		}
	}
	slices.Sort(all)
	for _, name := range all {
		if !want(name) {
			continue
		}
		e := kmsg.NewDescribeConfigsResponseResourceConfig()
		e.Name = name
		// The layers under the topic's own value, most specific first.
		type layer struct {
			value  string
			source kmsg.ConfigSource
		}
		// A stored key has no default anything keeps: only its own value.
		sk, stored := storedKeys[name]
		var layers []layer
		if !stored {
			layers = []layer{{DefaultTopicConfig().Value(name), kmsg.ConfigSourceDefaultConfig}}
		}
		if name == cfgCompression && fetchDefault != recordbatch.CodecNone {
			layers = append([]layer{{recordbatch.CodecName(fetchDefault), kmsg.ConfigSourceStaticBrokerConfig}}, layers...)
		}
		if k.explicit[name] {
			layers = append([]layer{{k.Value(name), kmsg.ConfigSourceDynamicTopicConfig}}, layers...)
		}
		v := layers[0].value
		e.Value, e.Source = &v, layers[0].source
		e.IsDefault = e.Source == kmsg.ConfigSourceDefaultConfig
		e.ConfigType = configTypes[name]
		if stored {
			e.ConfigType = sk.typ
		}
		if synonyms {
			for _, l := range layers {
				syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				syn.Name, syn.Value, syn.Source = name, &l.value, l.source
				e.ConfigSynonyms = append(e.ConfigSynonyms, syn)
			}
		}
		if docs {
			d := configDocs[name]
			if stored {
				d = "Stored and reported as set; not applied. " + sk.why
			}
			e.Documentation = &d
		}
		out = append(out, e)
	}
	return out
}

// ReadRecord reads one qk:topiccfg: record and its version (0: absent).
func ReadRecord(ctx context.Context, q *queen.Client, topic string) (*Record, int64, error) {
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
func decodeTopicCfg(v json.RawMessage) *Record {
	var cfg Record
	if json.Unmarshal(v, &cfg) != nil {
		return nil
	}
	return &cfg
}

// topicOfCfgKey is the topic a qk:topiccfg: key names.
func topicOfCfgKey(key string) string { return strings.TrimPrefix(key, queen.PrefixTopicCfg) }

// PutRecordOp is the write of a record, conditional on expect.
func PutRecordOp(topic string, cfg *Record, expect int64) (queen.KVOp, error) {
	v, err := json.Marshal(cfg)
	if err != nil {
		return queen.KVOp{}, fmt.Errorf("encode topic record of %s: %w", topic, err)
	}
	return queen.KVOp{Op: queen.OpPut, NS: queen.Namespace, Key: queen.TopicCfgKey(topic), Value: v, Forever: true, Expect: &expect}, nil
}

// WriteRecord writes a record if its version is still expect; applied
// false means somebody else wrote it first.
func WriteRecord(ctx context.Context, q *queen.Client, topic string, cfg *Record, expect int64) (bool, int64, error) {
	op, err := PutRecordOp(topic, cfg, expect)
	if err != nil {
		return false, 0, err
	}
	res, err := q.KV(ctx, []queen.KVOp{op})
	if err != nil {
		return false, 0, fmt.Errorf("write topic record of %s: %w", topic, err)
	}
	return res[0].Applied, res[0].Version, nil
}
