package node

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Every topic config Kafka knows is accepted when its value is valid, kept
// in the topic's record and described as set; an invalid value and an
// unknown name are refused INVALID_CONFIG with Kafka's messages, at create
// and at alter alike.
func TestStoredTopicConfigs(t *testing.T) {
	n, dq := newTestNode(t, nil)
	c := testConn(t, n)

	resp := createTopics(t, n, c, 5, false, createSpec{"streams-changelog", 2, 1, map[string]string{"segment.bytes": "67108864", "message.timestamp.type": "LogAppendTime", "min.insync.replicas": "2"}})
	if rt := resp.Topics[0]; rt.ErrorCode != 0 {
		t.Fatalf("create: %d %v", rt.ErrorCode, rt.ErrorMessage)
	}
	rr := describeTopicConfigs(t, n, c, "streams-changelog")
	got := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, e := range rr.Configs {
		got[e.Name] = e
	}
	for name, want := range map[string]string{"segment.bytes": "67108864", "message.timestamp.type": "LogAppendTime", "min.insync.replicas": "2"} {
		e, ok := got[name]
		if !ok || *e.Value != want || e.Source != kmsg.ConfigSourceDynamicTopicConfig || e.IsDefault || e.ConfigType == kmsg.ConfigTypeUnknown || e.Documentation == nil || len(e.ConfigSynonyms) != 1 {
			t.Fatalf("%s described %+v (ok %v), want %s as DYNAMIC_TOPIC_CONFIG", name, e, ok, want)
		}
	}
	if _, ok := got["segment.ms"]; ok {
		t.Fatal("an unset stored config is described")
	}

	// AlterConfigs (sarama's TestFuncAdminAlterConfig: segment.ms), then a
	// null-free full replacement that drops it.
	alter := func(configs map[string]string) kmsg.AlterConfigsResponseResource {
		req := kmsg.NewPtrAlterConfigsRequest()
		req.Version = 1
		r := kmsg.NewAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "streams-changelog"
		for k, v := range configs {
			r.Configs = append(r.Configs, kmsg.AlterConfigsRequestResourceConfig{Name: k, Value: strp(v)})
		}
		req.Resources = append(req.Resources, r)
		return call[*kmsg.AlterConfigsResponse](t, n, c, req).Resources[0]
	}
	if ar := alter(map[string]string{"segment.ms": "1000", "retention.ms": "86400000"}); ar.ErrorCode != 0 {
		t.Fatalf("alter segment.ms: %d %v", ar.ErrorCode, ar.ErrorMessage)
	}
	if v := configValues(describeTopicConfigs(t, n, c, "streams-changelog", "segment.ms", "segment.bytes")); fmt.Sprint(v) != "map[segment.ms:1000]" {
		t.Fatalf("after replacement: %v (segment.bytes must be gone, segment.ms set)", v)
	}
	if rec := dq.record("streams-changelog"); rec.Kafka["segment.ms"] != "1000" || rec.Kafka["segment.bytes"] != "" || rec.Partitions != 2 {
		t.Fatalf("record %+v", rec)
	}

	refusals := []struct {
		name, value, msg string
	}{
		{"segment.ms", "-5", "Invalid value -5 for configuration segment.ms: Value must be at least 1"},
		{"min.insync.replicas", "0", "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"},
		{"segment.bytes", "lots", "Invalid value lots for configuration segment.bytes: Not a number of type INT"},
		{"message.timestamp.type", "createtime", "Invalid value createtime for configuration message.timestamp.type: String must be one of: CreateTime, LogAppendTime"},
		{"unclean.leader.election.enable", "yes", "Invalid value yes for configuration unclean.leader.election.enable: Expected value to be either true or false"},
		{"segment.msec", "1000", "Unknown topic config name: segment.msec"},
		{"log.segment.bytes", "1048576", "Unknown topic config name: log.segment.bytes"},
	}
	for _, r := range refusals {
		ir := incrementalAlter(t, n, c, "streams-changelog", kmsg.IncrementalAlterConfigOpSet, r.name, strp(r.value))
		if ir.ErrorCode != kerr.InvalidConfig.Code || ir.ErrorMessage == nil || *ir.ErrorMessage != r.msg {
			t.Errorf("incremental %s=%s: %d %v, want INVALID_CONFIG %q", r.name, r.value, ir.ErrorCode, ir.ErrorMessage, r.msg)
		}
		if ar := alter(map[string]string{r.name: r.value}); ar.ErrorCode != kerr.InvalidConfig.Code || ar.ErrorMessage == nil || *ar.ErrorMessage != r.msg {
			t.Errorf("alter %s=%s: %d %v", r.name, r.value, ar.ErrorCode, ar.ErrorMessage)
		}
		cr := createTopics(t, n, c, 5, false, createSpec{"refused", 1, 1, map[string]string{r.name: r.value}}).Topics[0]
		if cr.ErrorCode != kerr.InvalidConfig.Code || cr.ErrorMessage == nil || *cr.ErrorMessage != r.msg {
			t.Errorf("create %s=%s: %d %v", r.name, r.value, cr.ErrorCode, cr.ErrorMessage)
		}
	}
	if dq.queue("refused") != nil {
		t.Fatal("a refused create made its queue")
	}
	// LogConfig.validateValues: the one check across keys.
	if ir := incrementalAlter(t, n, c, "streams-changelog", kmsg.IncrementalAlterConfigOpSet, "min.compaction.lag.ms", strp("5000")); ir.ErrorCode != 0 {
		t.Fatalf("min.compaction.lag.ms: %d %v", ir.ErrorCode, ir.ErrorMessage)
	}
	if ir := incrementalAlter(t, n, c, "streams-changelog", kmsg.IncrementalAlterConfigOpSet, "max.compaction.lag.ms", strp("4000")); ir.ErrorCode != kerr.InvalidConfig.Code || *ir.ErrorMessage != "conflict topic config setting min.compaction.lag.ms (5000) > max.compaction.lag.ms (4000)" {
		t.Fatalf("lag conflict: %d %v", ir.ErrorCode, ir.ErrorMessage)
	}

	// IncrementalAlterConfigs SET, APPEND to a list, DELETE; DELETE of a name
	// Kafka does not know removes nothing and is not refused.
	steps := []struct {
		op    kmsg.IncrementalAlterConfigOp
		name  string
		value *string
		want  string
	}{
		{kmsg.IncrementalAlterConfigOpSet, "segment.bytes", strp("2097152"), "map[min.compaction.lag.ms:5000 segment.bytes:2097152 segment.ms:1000]"},
		{kmsg.IncrementalAlterConfigOpAppend, "leader.replication.throttled.replicas", strp("0:1"), "map[leader.replication.throttled.replicas:0:1 min.compaction.lag.ms:5000 segment.bytes:2097152 segment.ms:1000]"},
		{kmsg.IncrementalAlterConfigOpAppend, "leader.replication.throttled.replicas", strp("1:1"), "map[leader.replication.throttled.replicas:0:1,1:1 min.compaction.lag.ms:5000 segment.bytes:2097152 segment.ms:1000]"},
		{kmsg.IncrementalAlterConfigOpSubtract, "leader.replication.throttled.replicas", strp("0:1"), "map[leader.replication.throttled.replicas:1:1 min.compaction.lag.ms:5000 segment.bytes:2097152 segment.ms:1000]"},
		{kmsg.IncrementalAlterConfigOpDelete, "leader.replication.throttled.replicas", nil, "map[min.compaction.lag.ms:5000 segment.bytes:2097152 segment.ms:1000]"},
		{kmsg.IncrementalAlterConfigOpDelete, "segment.ms", nil, "map[min.compaction.lag.ms:5000 segment.bytes:2097152]"},
		{kmsg.IncrementalAlterConfigOpDelete, "no.such.config", nil, "map[min.compaction.lag.ms:5000 segment.bytes:2097152]"},
	}
	stored := func() string {
		v := configValues(describeTopicConfigs(t, n, c, "streams-changelog"))
		for _, k := range []string{"cleanup.policy", "compression.type", "max.message.bytes", "retention.ms"} {
			delete(v, k)
		}
		return fmt.Sprint(v)
	}
	for i, s := range steps {
		if ir := incrementalAlter(t, n, c, "streams-changelog", s.op, s.name, s.value); ir.ErrorCode != 0 {
			t.Fatalf("step %d: %d %v", i, ir.ErrorCode, ir.ErrorMessage)
		}
		if got := stored(); got != s.want {
			t.Fatalf("step %d: described %s, want %s", i, got, s.want)
		}
	}
	if ir := incrementalAlter(t, n, c, "streams-changelog", kmsg.IncrementalAlterConfigOpAppend, "segment.bytes", strp("1")); ir.ErrorCode != kerr.InvalidConfig.Code {
		t.Fatalf("append to a non-list: %d", ir.ErrorCode)
	}
	// The four applied keys kept their place: retention.ms is still 1 day.
	if v := configValues(describeTopicConfigs(t, n, c, "streams-changelog", "retention.ms")); v["retention.ms"] != "86400000" {
		t.Fatalf("retention.ms %v", v)
	}
}
