package configres

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type alterCfg struct {
	name  string
	op    kmsg.IncrementalAlterConfigOp
	value *string
}

type alterRes struct {
	typ  kmsg.ConfigResourceType
	name string
	cfgs []alterCfg
}

func strp(s string) *string { return &s }

// TestIncrementalAlterConfigsKafkaPreprocess: what Kafka's
// ConfigAdminManager.preprocess refuses before any resource is touched is
// refused here with its INVALID_REQUEST and sentence: an unknown operation,
// a null value, a key or a resource named twice, a broker id that is not
// this node; and a broker config, which the facade cannot update at
// runtime, gets Kafka's sentence for a static config. (That a refusal
// touches no queue is node's TestAlterPreprocessTouchesNoQueue.)
func TestIncrementalAlterConfigsKafkaPreprocess(t *testing.T) {
	set, del := kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpDelete
	topic, broker := kmsg.ConfigResourceTypeTopic, kmsg.ConfigResourceTypeBroker

	send := func(rs ...alterRes) []Outcome {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		for _, r := range rs {
			rr := kmsg.NewIncrementalAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = r.typ, r.name
			for _, x := range r.cfgs {
				cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
				cfg.Name, cfg.Op, cfg.Value = x.name, x.op, x.value
				rr.Configs = append(rr.Configs, cfg)
			}
			req.Resources = append(req.Resources, rr)
		}
		return Preprocess(IncrementalResources(req.Resources), true, 0)
	}
	for _, tc := range []struct {
		name string
		res  alterRes
		code int16
		msg  string
	}{
		{"unknown op", alterRes{topic, "orders", []alterCfg{{"retention.ms", 9, strp("60000")}}}, kerr.InvalidRequest.Code, "Unknown operations type 9"},
		{"null set", alterRes{topic, "orders", []alterCfg{{"retention.ms", set, nil}, {"cleanup.policy", set, nil}}}, kerr.InvalidRequest.Code, "Null value not supported for : retention.ms, cleanup.policy"},
		{"key twice", alterRes{topic, "orders", []alterCfg{{"retention.ms", set, strp("60000")}, {"retention.ms", del, nil}}}, kerr.InvalidRequest.Code, "Error due to duplicate config keys"},
		{"broker", alterRes{broker, "0", []alterCfg{{"message.max.bytes", set, strp("2000000")}}}, kerr.InvalidRequest.Code, "Cannot update these configs dynamically: Set(message.max.bytes)"},
		{"cluster default", alterRes{broker, "", []alterCfg{{"log.retention.ms", set, strp("1")}, {"num.partitions", set, strp("3")}}}, kerr.InvalidRequest.Code, "Cannot update these configs dynamically: Set(log.retention.ms, num.partitions)"},
		{"broker unknown op", alterRes{broker, "0", []alterCfg{{"num.partitions", 7, strp("3")}}}, kerr.InvalidRequest.Code, "Unknown operations type 7"},
		{"other broker", alterRes{broker, "7", []alterCfg{{"num.partitions", set, strp("3")}}}, kerr.InvalidRequest.Code, "Unexpected broker id, expected 0, but received 7"},
		{"broker name", alterRes{broker, "orders", []alterCfg{{"num.partitions", set, strp("3")}}}, kerr.InvalidRequest.Code, "Node id must be an integer, but it is: orders"},
		// Deleting a dynamic value never set changes nothing: success, as on Kafka.
		{"broker delete", alterRes{broker, "0", []alterCfg{{"num.partitions", del, nil}}}, 0, ""},
	} {
		out := send(tc.res)[0]
		if !out.Done || out.Code != tc.code || out.Msg != tc.msg {
			t.Errorf("%s: %+v, want %d %q", tc.name, out, tc.code, tc.msg)
		}
	}
	twice := send(alterRes{topic, "orders", []alterCfg{{"retention.ms", set, strp("60000")}}}, alterRes{topic, "orders", []alterCfg{{"cleanup.policy", set, strp("delete")}}})
	for i, out := range twice {
		if !out.Done || out.Code != kerr.InvalidRequest.Code || out.Msg != "Each resource must appear at most once." {
			t.Errorf("resource twice [%d]: %+v", i, out)
		}
	}
	// The same request without the fault goes on to be applied.
	if out := send(alterRes{topic, "orders", []alterCfg{{"retention.ms", set, strp("60000")}}})[0]; out.Done || out.Code != 0 {
		t.Fatalf("valid alter: %+v", out)
	}
}

// TestAlterConfigsKafkaPreprocess: the legacy AlterConfigs passes the same
// preprocessing: a null value is INVALID_REQUEST, not "back to the
// default", and a broker config gets Kafka's static-config sentence.
func TestAlterConfigsKafkaPreprocess(t *testing.T) {
	send := func(typ kmsg.ConfigResourceType, name string, cfgs ...kmsg.AlterConfigsRequestResourceConfig) Outcome {
		r := kmsg.NewAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName, r.Configs = typ, name, cfgs
		return Preprocess(LegacyResources([]kmsg.AlterConfigsRequestResource{r}), false, 0)[0]
	}
	for _, tc := range []struct {
		name string
		out  Outcome
		msg  string
	}{
		{"null", send(kmsg.ConfigResourceTypeTopic, "orders", kmsg.AlterConfigsRequestResourceConfig{Name: "retention.ms"}), "Null value not supported for : retention.ms"},
		{"broker", send(kmsg.ConfigResourceTypeBroker, "0", kmsg.AlterConfigsRequestResourceConfig{Name: "num.partitions", Value: strp("3")}), "Cannot update these configs dynamically: Set(num.partitions)"},
	} {
		if !tc.out.Done || tc.out.Code != kerr.InvalidRequest.Code || tc.out.Msg != tc.msg {
			t.Errorf("%s: %+v", tc.name, tc.out)
		}
	}
}
