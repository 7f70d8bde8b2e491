package configres

import (
	"context"
	"fmt"
	"testing"

	"github.com/sethvargo/go-envconfig"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/config"
)

// describeConfigs answers one resource of node 0 as the DescribeConfigs
// handler does, synonyms and documentation both asked or neither.
func describeConfigs(cfg config.Facade, typ kmsg.ConfigResourceType, name string, synonyms bool, names ...string) kmsg.DescribeConfigsResponseResource {
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = typ, name, names
	rr := kmsg.NewDescribeConfigsResponseResource()
	if typ == kmsg.ConfigResourceTypeBrokerLogger {
		DescribeBrokerLogger(r, 0, &rr)
	} else {
		DescribeBroker(r, 0, cfg, synonyms, synonyms, &rr)
	}
	return rr
}

// testFacade is the configuration a node loads from env (over the
// defaults, and 4 partitions as node's tests have it).
func testFacade(t *testing.T, env map[string]string) config.Facade {
	t.Helper()
	e := map[string]string{"QUEEN_URL": "http://queen.test:6632", "QUEEN_KAFKA_ADVERTISED_ADDR": "kafka.test:9092", "QUEEN_KAFKA_DEFAULT_PARTITIONS": "4"}
	for k, v := range env {
		e[k] = v
	}
	cfg, err := config.LoadFacade(context.Background(), envconfig.MapLookuper(e))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}

func configValues(rr kmsg.DescribeConfigsResponseResource) map[string]string {
	out := map[string]string{}
	for _, c := range rr.Configs {
		out[c.Name] = *c.Value
	}
	return out
}

// TestDescribeConfigsBroker: this node's BROKER resource lists the broker
// configs the facade holds and enforces, read-only, each from the
// facade's configuration (STATIC_BROKER_CONFIG over Kafka's default) or
// Kafka's default itself; the empty name (the cluster-wide dynamic
// defaults) has none, and another id is Kafka's INVALID_REQUEST.
func TestDescribeConfigsBroker(t *testing.T) {
	cfg := testFacade(t, map[string]string{"QUEEN_KAFKA_FETCH_COMPRESSION": "zstd", "QUEEN_KAFKA_GROUP_MAX_SESSION_TIMEOUT_MS": "120000"})

	rr := describeConfigs(cfg, kmsg.ConfigResourceTypeBroker, "0", true)
	want := "map[auto.create.topics.enable:true broker.id:0 compression.type:zstd group.initial.rebalance.delay.ms:3000 group.max.session.timeout.ms:120000 group.min.session.timeout.ms:6000 message.max.bytes:1048588 node.id:0 num.partitions:4 transaction.max.timeout.ms:900000]"
	if rr.ErrorCode != 0 || fmt.Sprint(configValues(rr)) != want {
		t.Fatalf("broker 0: %d %v", rr.ErrorCode, configValues(rr))
	}
	for _, e := range rr.Configs {
		fixed := e.Name == "auto.create.topics.enable" || e.Name == "message.max.bytes"
		wantSource, synonyms := kmsg.ConfigSourceStaticBrokerConfig, 2
		if fixed {
			wantSource, synonyms = kmsg.ConfigSourceDefaultConfig, 1
		}
		if !e.ReadOnly || e.IsSensitive || e.Source != wantSource || len(e.ConfigSynonyms) != synonyms || e.Documentation == nil || e.ConfigType == kmsg.ConfigTypeUnknown {
			t.Errorf("%s: %+v", e.Name, e)
		}
		if last := e.ConfigSynonyms[len(e.ConfigSynonyms)-1]; last.Source != kmsg.ConfigSourceDefaultConfig {
			t.Errorf("%s: the last synonym is not Kafka's default: %+v", e.Name, last)
		}
	}
	// QUEEN_KAFKA_AUTO_CREATE_TOPICS_ENABLE=false is the broker's own
	// setting over Kafka's default true, as server.properties would be.
	off := describeConfigs(testFacade(t, map[string]string{"QUEEN_KAFKA_AUTO_CREATE_TOPICS_ENABLE": "false"}), kmsg.ConfigResourceTypeBroker, "0", true, "auto.create.topics.enable")
	if len(off.Configs) != 1 {
		t.Fatalf("auto-create off: %+v", off)
	}
	if e := off.Configs[0]; *e.Value != "false" || e.Source != kmsg.ConfigSourceStaticBrokerConfig || e.IsDefault || !e.ReadOnly || len(e.ConfigSynonyms) != 2 ||
		*e.ConfigSynonyms[0].Value != "false" || e.ConfigSynonyms[0].Source != kmsg.ConfigSourceStaticBrokerConfig || *e.ConfigSynonyms[1].Value != "true" {
		t.Errorf("auto-create off: %+v", e)
	}
	if rr := describeConfigs(cfg, kmsg.ConfigResourceTypeBroker, "0", false, "num.partitions", "log.dirs"); fmt.Sprint(configValues(rr)) != "map[num.partitions:4]" || rr.Configs[0].ConfigSynonyms != nil {
		t.Errorf("filtered: %+v", rr.Configs)
	}

	// Kafka's ConfigHelper: "" is the dynamic cluster defaults, none here.
	if rr := describeConfigs(cfg, kmsg.ConfigResourceTypeBroker, "", false); rr.ErrorCode != 0 || rr.ErrorMessage != nil || len(rr.Configs) != 0 {
		t.Errorf("cluster defaults: %+v", rr)
	}
	for _, tc := range []struct {
		typ        kmsg.ConfigResourceType
		name, want string
	}{
		{kmsg.ConfigResourceTypeBroker, "7", "Unexpected broker id, expected 0 or empty string, but received 7"},
		{kmsg.ConfigResourceTypeBroker, "x", "Broker id must be an integer, but it is: x"},
		{kmsg.ConfigResourceTypeBrokerLogger, "", "Broker id must not be empty"},
		{kmsg.ConfigResourceTypeBrokerLogger, "7", "Unexpected broker id, expected 0 but received 7"},
	} {
		rr := describeConfigs(cfg, tc.typ, tc.name, false)
		if rr.ErrorCode != kerr.InvalidRequest.Code || rr.ErrorMessage == nil || *rr.ErrorMessage != tc.want || len(rr.Configs) != 0 {
			t.Errorf("%v %q: %d %v", tc.typ, tc.name, rr.ErrorCode, rr.ErrorMessage)
		}
	}
	if rr := describeConfigs(cfg, kmsg.ConfigResourceTypeBrokerLogger, "0", false); rr.ErrorCode != 0 {
		t.Errorf("own broker logger: %d %v", rr.ErrorCode, rr.ErrorMessage)
	}
}
