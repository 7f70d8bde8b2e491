package configres

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/config"
	"github.com/queen-mq/queen-kafka/recordbatch"
)

// brokerConfig is one broker config the facade can state truthfully: a
// value it holds and enforces, where the value comes from, and Kafka's own
// default behind it.
type brokerConfig struct {
	name  string
	value string
	// static: the value is the facade's configuration (its environment,
	// Kafka's server.properties), reported STATIC_BROKER_CONFIG with
	// kafkaDefault as the DEFAULT_CONFIG synonym behind it; otherwise it is
	// Kafka's default itself, fixed in the facade.
	static       bool
	kafkaDefault string
	typ          kmsg.ConfigType
	doc          string
}

// brokerConfigs is what DescribeConfigs answers for the BROKER resource of
// node self, configured by cfg, sorted by name: the keys whose value the
// facade holds and enforces, and no others, since a value nothing checks
// would mislead. None is alterable here, so each is read-only.
func brokerConfigs(self int32, cfg config.Facade) []brokerConfig {
	id := strconv.Itoa(int(self))
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	compression := brokerConfig{name: "compression.type", value: "producer", kafkaDefault: "producer", typ: kmsg.ConfigTypeString,
		doc: "The codec of Fetch answers for topics whose compression.type is unset (QUEEN_KAFKA_FETCH_COMPRESSION); producer answers uncompressed. Stored records are never changed."}
	if cfg.FetchCompression != recordbatch.CodecNone {
		compression.value, compression.static = recordbatch.CodecName(cfg.FetchCompression), true
	}
	autoCreate := brokerConfig{name: "auto.create.topics.enable", value: "true", kafkaDefault: "true", typ: kmsg.ConfigTypeBoolean,
		doc: "A Metadata request that allows it creates the topics it names that do not exist; false answers them UNKNOWN_TOPIC_OR_PARTITION (QUEEN_KAFKA_AUTO_CREATE_TOPICS_ENABLE)."}
	if !cfg.AutoCreateTopics {
		autoCreate.value, autoCreate.static = "false", true
	}
	return []brokerConfig{
		autoCreate,
		{name: "broker.id", value: id, static: true, kafkaDefault: "-1", typ: kmsg.ConfigTypeInt,
			doc: "This node's id: 0 in single mode, QUEEN_KAFKA_NODE_ID in cluster mode."},
		compression,
		{name: "group.initial.rebalance.delay.ms", value: ms(cfg.GroupJoinDelay), static: true, kafkaDefault: "3000", typ: kmsg.ConfigTypeInt,
			doc: "How long an empty group's first join waits for more members (QUEEN_KAFKA_GROUP_JOIN_DELAY_MS)."},
		{name: "group.max.session.timeout.ms", value: ms(cfg.GroupMaxSessionTimeout), static: true, kafkaDefault: "1800000", typ: kmsg.ConfigTypeInt,
			doc: "The largest session timeout a member may ask for (QUEEN_KAFKA_GROUP_MAX_SESSION_TIMEOUT_MS)."},
		{name: "group.min.session.timeout.ms", value: ms(cfg.GroupMinSessionTimeout), static: true, kafkaDefault: "6000", typ: kmsg.ConfigTypeInt,
			doc: "The smallest session timeout a member may ask for (QUEEN_KAFKA_GROUP_MIN_SESSION_TIMEOUT_MS)."},
		{name: "message.max.bytes", value: "1048588", kafkaDefault: "1048588", typ: kmsg.ConfigTypeInt,
			doc: "The largest record batch a Produce may carry on a topic whose max.message.bytes is unset."},
		{name: "node.id", value: id, static: true, kafkaDefault: "-1", typ: kmsg.ConfigTypeInt,
			doc: "This node's id: 0 in single mode, QUEEN_KAFKA_NODE_ID in cluster mode."},
		{name: "num.partitions", value: strconv.Itoa(int(cfg.DefaultPartitions)), static: true, kafkaDefault: "1", typ: kmsg.ConfigTypeInt,
			doc: "Partitions of a topic created with num_partitions -1 or auto-created, and the floor of the width of a topic that declared none (QUEEN_KAFKA_DEFAULT_PARTITIONS)."},
		{name: "transaction.max.timeout.ms", value: ms(cfg.TxnMaxTimeout), static: true, kafkaDefault: "900000", typ: kmsg.ConfigTypeInt,
			doc: "The largest transaction timeout a producer may ask for (QUEEN_KAFKA_TXN_MAX_TIMEOUT_MS)."},
	}
}

// DescribeBroker answers into rr the BROKER resource r as Kafka's
// ConfigHelper does, for node self configured by cfg: the empty name is the
// cluster-wide dynamic defaults, which this facade has none of (its
// settings are static); self's id is its configs, with their synonyms and
// documentation when asked; any other name is INVALID_REQUEST, since a
// broker describes only itself.
func DescribeBroker(r kmsg.DescribeConfigsRequestResource, self int32, cfg config.Facade, synonyms, docs bool, rr *kmsg.DescribeConfigsResponseResource) {
	if r.ResourceName == "" {
		return
	}
	if msg := otherBroker(r.ResourceName, self, "Unexpected broker id, expected %d or empty string, but received %s"); msg != "" {
		refuse(rr, msg)
		return
	}
	for _, b := range brokerConfigs(self, cfg) {
		if len(r.ConfigNames) > 0 && !slices.Contains(r.ConfigNames, b.name) {
			continue
		}
		e := kmsg.NewDescribeConfigsResponseResourceConfig()
		e.Name, e.Value, e.ReadOnly, e.ConfigType = b.name, kmsg.StringPtr(b.value), true, b.typ
		e.Source = kmsg.ConfigSourceDefaultConfig
		if b.static {
			e.Source = kmsg.ConfigSourceStaticBrokerConfig
		}
		e.IsDefault = e.Source == kmsg.ConfigSourceDefaultConfig
		if synonyms {
			if b.static {
				syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				syn.Name, syn.Value, syn.Source = b.name, kmsg.StringPtr(b.value), kmsg.ConfigSourceStaticBrokerConfig
				e.ConfigSynonyms = append(e.ConfigSynonyms, syn)
			}
			syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			syn.Name, syn.Value, syn.Source = b.name, kmsg.StringPtr(b.kafkaDefault), kmsg.ConfigSourceDefaultConfig
			e.ConfigSynonyms = append(e.ConfigSynonyms, syn)
		}
		if docs {
			e.Documentation = kmsg.StringPtr(b.doc)
		}
		rr.Configs = append(rr.Configs, e)
	}
}

// DescribeBrokerLogger answers into rr the BROKER_LOGGER resource r as
// Kafka's ConfigHelper does for the name; node self's own loggers are none
// a client can set (the facade's log level is LOG_LEVEL, read at boot), so
// it lists none.
func DescribeBrokerLogger(r kmsg.DescribeConfigsRequestResource, self int32, rr *kmsg.DescribeConfigsResponseResource) {
	if r.ResourceName == "" {
		refuse(rr, "Broker id must not be empty")
		return
	}
	if msg := otherBroker(r.ResourceName, self, "Unexpected broker id, expected %d but received %s"); msg != "" {
		refuse(rr, msg)
	}
}

// otherBroker is Kafka's refusal of a described broker resource named name
// on node self, "" when name is self's id: unexpected is its sentence for
// another id, given self and name.
func otherBroker(name string, self int32, unexpected string) string {
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return "Broker id must be an integer, but it is: " + name
	}
	if int32(id) != self {
		return fmt.Sprintf(unexpected, self, name)
	}
	return ""
}

// refuse answers rr with Kafka's INVALID_REQUEST and msg.
func refuse(rr *kmsg.DescribeConfigsResponseResource, msg string) {
	rr.ErrorCode, rr.ErrorMessage = kerr.InvalidRequest.Code, &msg
}
