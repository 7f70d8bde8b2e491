package node

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/catalogue"
	"github.com/queen-mq/queen-kafka/transport"
)

func deleteTopics(t *testing.T, n *Node, c *transport.Conn, version int16, names ...string) *kmsg.DeleteTopicsResponse {
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version = version
	req.TopicNames = names
	return call[*kmsg.DeleteTopicsResponse](t, n, c, req)
}

func TestDeleteTopics(t *testing.T) {
	n, dq := newTestNode(t, nil)
	c := testConn(t, n)
	if rt := createTopics(t, n, c, 5, false, createSpec{"orders", 3, 1, nil}).Topics[0]; rt.ErrorCode != 0 {
		t.Fatalf("create %d", rt.ErrorCode)
	}
	resp := deleteTopics(t, n, c, 5, "orders", "missing", "__consumer_offsets")
	if resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("delete: %d %v", resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage)
	}
	for _, rt := range resp.Topics[1:] {
		if rt.ErrorCode != kerr.UnknownTopicOrPartition.Code || rt.ErrorMessage == nil {
			t.Fatalf("%s: %d %v", *rt.Topic, rt.ErrorCode, rt.ErrorMessage)
		}
	}
	if dq.queue("orders") != nil || dq.record("orders") != nil {
		t.Fatal("queue or record survived the delete")
	}
	// The catalogue forgets it at once, not a TTL later.
	if _, ok, _ := n.cats.TopicWidth(t.Context(), callerOf(c), "orders"); ok {
		t.Fatal("deleted topic still in the catalogue")
	}
	// Recreated natively, it does not inherit the old floor.
	dq.addQueue("orders", 0)
	withClock(n).Advance(catalogue.TTL)
	if w, ok, _ := n.cats.TopicWidth(t.Context(), callerOf(c), "orders"); !ok || w != 4 {
		t.Fatalf("recreated width %d", w)
	}
}

func TestDeleteTopicsAuthFailure(t *testing.T) {
	n, dq := newTestNode(t, nil)
	dq.addQueue("orders", 1)
	dq.setFault(func(r *http.Request) (int, string, string) {
		if r.Method == http.MethodDelete {
			return 403, "", `{"error":"Insufficient permissions"}`
		}
		return 0, "", ""
	})
	rt := deleteTopics(t, n, testConn(t, n), 5, "orders").Topics[0]
	if rt.ErrorCode != kerr.TopicAuthorizationFailed.Code || rt.ErrorMessage == nil || *rt.ErrorMessage == "" {
		t.Fatalf("%d %v", rt.ErrorCode, rt.ErrorMessage)
	}
	if dq.queue("orders") == nil {
		t.Fatal("deleted despite the refusal")
	}
}

func createPartitions(t *testing.T, n *Node, c *transport.Conn, topic string, count int32, assign bool) kmsg.CreatePartitionsResponseTopic {
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.Version = 3
	tp := kmsg.NewCreatePartitionsRequestTopic()
	tp.Topic, tp.Count = topic, count
	if assign {
		tp.Assignment = []kmsg.CreatePartitionsRequestTopicAssignment{{Replicas: []int32{0}}}
	}
	req.Topics = append(req.Topics, tp)
	return call[*kmsg.CreatePartitionsResponse](t, n, c, req).Topics[0]
}

func TestCreatePartitions(t *testing.T) {
	n, dq := newTestNode(t, nil)
	c := testConn(t, n)
	createTopics(t, n, c, 5, false, createSpec{"orders", 3, 1, map[string]string{"retention.ms": "60000"}})
	if rt := createPartitions(t, n, c, "orders", 5, false); rt.ErrorCode != 0 {
		t.Fatalf("increase: %d %v", rt.ErrorCode, rt.ErrorMessage)
	}
	rec := dq.record("orders")
	if rec.Partitions != 5 || rec.Kafka["retention.ms"] != "60000" || rec.Set == nil {
		t.Fatalf("record after widening: %+v", rec)
	}
	resp := metadata(t, n, c, 9, false, "orders")
	if got := len(resp.Topics[0].Partitions); got != 5 {
		t.Fatalf("Metadata width %d after widening", got)
	}
	for _, tc := range []struct {
		count  int32
		assign bool
		code   int16
		msg    string
	}{
		{2, false, kerr.InvalidPartitions.Code, "The topic orders currently has 5 partition(s); 2 would not be an increase."},
		{5, false, kerr.InvalidPartitions.Code, "Topic already has 5 partition(s)."},
		{100_001, false, kerr.InvalidPartitions.Code, ""},
		{7, true, kerr.InvalidReplicaAssignment.Code, "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified."},
	} {
		rt := createPartitions(t, n, c, "orders", tc.count, tc.assign)
		if rt.ErrorCode != tc.code || rt.ErrorMessage == nil || (tc.msg != "" && *rt.ErrorMessage != tc.msg) {
			t.Errorf("count %d: %d %v", tc.count, rt.ErrorCode, rt.ErrorMessage)
		}
	}
	if rt := createPartitions(t, n, c, "missing", 9, false); rt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("missing: %d", rt.ErrorCode)
	}
	// A manual assignment Kafka's controller accepts (one list per added
	// partition, naming node 0, the broker single mode lists) widens the
	// topic as an unassigned increase does (kafka-go's
	// TestClientCreatePartitions).
	if rt := createPartitions(t, n, c, "orders", 6, true); rt.ErrorCode != 0 {
		t.Fatalf("valid assignment: %d %v", rt.ErrorCode, rt.ErrorMessage)
	}
	if rec := dq.record("orders"); rec.Partitions != 6 {
		t.Fatalf("record after an assigned widening: %+v", rec)
	}
	if got := len(metadata(t, n, c, 9, false, "orders").Topics[0].Partitions); got != 6 {
		t.Fatalf("Metadata width %d after an assigned widening", got)
	}
}

// Widening a topic the facade did not create records a floor only; it does
// not make the topic alterable.
func TestCreatePartitionsOnNativeTopicIsFloorOnly(t *testing.T) {
	n, dq := newTestNode(t, nil)
	c := testConn(t, n)
	id := dq.addQueue("native", 2)
	if rt := createPartitions(t, n, c, "native", 8, false); rt.ErrorCode != 0 {
		t.Fatalf("%d %v", rt.ErrorCode, rt.ErrorMessage)
	}
	rec := dq.record("native")
	if rec == nil || rec.Partitions != 8 || rec.Set != nil || rec.QID == nil || *rec.QID != id {
		t.Fatalf("record %+v", rec)
	}
	if rt := incrementalAlter(t, n, c, "native", kmsg.IncrementalAlterConfigOpSet, "retention.ms", strp("60000")); rt.ErrorCode != kerr.PolicyViolation.Code {
		t.Fatalf("alter of a native topic: %d", rt.ErrorCode)
	}
	// The facade's own keys are every topic's; retention is not reported.
	if rr := describeTopicConfigs(t, n, c, "native"); rr.ErrorCode != 0 || fmt.Sprint(configValues(rr)) != "map[compression.type:producer max.message.bytes:1048588]" {
		t.Fatalf("describe of a native topic: %+v", rr)
	}
}

func TestDescribeConfigs(t *testing.T) {
	n, dq := newTestNode(t, nil)
	c := testConn(t, n)
	createTopics(t, n, c, 5, false, createSpec{"orders", 3, 1, map[string]string{"retention.ms": "86400000"}})
	dq.addQueue("native", 1)

	rr := describeTopicConfigs(t, n, c, "orders")
	if rr.ErrorCode != 0 || fmt.Sprint(configValues(rr)) != "map[cleanup.policy:delete compression.type:producer max.message.bytes:1048588 retention.ms:86400000]" {
		t.Fatalf("%d %v", rr.ErrorCode, configValues(rr))
	}
	for _, e := range rr.Configs {
		wantSource := kmsg.ConfigSourceDefaultConfig
		if e.Name == "retention.ms" {
			wantSource = kmsg.ConfigSourceDynamicTopicConfig
		}
		if e.Source != wantSource || e.Documentation == nil || len(e.ConfigSynonyms) == 0 || e.ConfigType == kmsg.ConfigTypeUnknown {
			t.Errorf("%s: %+v", e.Name, e)
		}
	}
	if rr := describeTopicConfigs(t, n, c, "orders", "retention.ms", "segment.bytes"); fmt.Sprint(configValues(rr)) != "map[retention.ms:86400000]" {
		t.Errorf("filtered: %v", configValues(rr))
	}
	if rr := describeTopicConfigs(t, n, c, "native"); rr.ErrorCode != 0 || fmt.Sprint(configValues(rr)) != "map[compression.type:producer max.message.bytes:1048588]" {
		t.Errorf("native topic answered %v: only the facade's own keys are its to report", configValues(rr))
	}
	for _, missing := range []string{"missing", "__consumer_offsets"} {
		if rr := describeTopicConfigs(t, n, c, missing); rr.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("%s: %d", missing, rr.ErrorCode)
		}
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version = 1
	for _, name := range []string{"0", "7"} {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, name
		req.Resources = append(req.Resources, r)
	}
	resp := call[*kmsg.DescribeConfigsResponse](t, n, c, req)
	if resp.Resources[0].ErrorCode != 0 || len(resp.Resources[0].Configs) == 0 || resp.Resources[1].ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("brokers: %+v", resp.Resources)
	}
}

func incrementalAlter(t *testing.T, n *Node, c *transport.Conn, topic string, op kmsg.IncrementalAlterConfigOp, name string, value *string) kmsg.IncrementalAlterConfigsResponseResource {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Version = 1
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Op, cfg.Value = name, op, value
	r.Configs = append(r.Configs, cfg)
	req.Resources = append(req.Resources, r)
	return call[*kmsg.IncrementalAlterConfigsResponse](t, n, c, req).Resources[0]
}

func TestIncrementalAlterConfigs(t *testing.T) {
	n, dq := newTestNode(t, nil)
	c := testConn(t, n)
	createTopics(t, n, c, 5, false, createSpec{"orders", 3, 1, nil})

	steps := []struct {
		op      kmsg.IncrementalAlterConfigOp
		name    string
		value   *string
		code    int16
		values  string
		enabled bool
		secs    float64
	}{
		{kmsg.IncrementalAlterConfigOpSet, "retention.ms", strp("7200000"), 0, "map[cleanup.policy:delete compression.type:producer max.message.bytes:1048588 retention.ms:7200000]", true, 7200},
		{kmsg.IncrementalAlterConfigOpAppend, "cleanup.policy", strp("compact"), 0, "map[cleanup.policy:compact,delete compression.type:producer max.message.bytes:1048588 retention.ms:7200000]", true, 7200},
		{kmsg.IncrementalAlterConfigOpSubtract, "cleanup.policy", strp("delete"), 0, "map[cleanup.policy:compact compression.type:producer max.message.bytes:1048588 retention.ms:7200000]", false, 7200},
		{kmsg.IncrementalAlterConfigOpDelete, "cleanup.policy", nil, 0, "map[cleanup.policy:delete compression.type:producer max.message.bytes:1048588 retention.ms:7200000]", true, 7200},
		{kmsg.IncrementalAlterConfigOpDelete, "retention.ms", nil, 0, "map[cleanup.policy:delete compression.type:producer max.message.bytes:1048588 retention.ms:-1]", false, 0},
		{kmsg.IncrementalAlterConfigOpSet, "retention.ms", strp("10"), kerr.InvalidConfig.Code, "", false, 0},
		{kmsg.IncrementalAlterConfigOpAppend, "retention.ms", strp("10"), kerr.InvalidConfig.Code, "", false, 0},
		{kmsg.IncrementalAlterConfigOpSet, "segment.bytes", strp("10"), kerr.InvalidConfig.Code, "", false, 0},
	}
	for i, s := range steps {
		configures := dq.count("POST /api/v1/configure")
		rr := incrementalAlter(t, n, c, "orders", s.op, s.name, s.value)
		if rr.ErrorCode != s.code {
			t.Fatalf("step %d: %d %v", i, rr.ErrorCode, rr.ErrorMessage)
		}
		if s.code != 0 {
			if rr.ErrorMessage == nil || dq.count("POST /api/v1/configure") != configures {
				t.Fatalf("step %d: refused without message, or configured anyway", i)
			}
			continue
		}
		body := dq.lastBody("POST /api/v1/configure")
		if body["retentionEnabled"] != s.enabled || body["retentionSeconds"] != s.secs || body["queue"] != "orders" {
			t.Fatalf("step %d: configure body %v", i, body)
		}
		if got := fmt.Sprint(configValues(describeTopicConfigs(t, n, c, "orders"))); got != s.values {
			t.Fatalf("step %d: described %s, want %s", i, got, s.values)
		}
	}
	if rec := dq.record("orders"); rec.Partitions != 3 {
		t.Fatalf("alter lost the width: %+v", rec)
	}
	if rr := incrementalAlter(t, n, c, "missing", kmsg.IncrementalAlterConfigOpSet, "retention.ms", strp("7200000")); rr.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("missing: %d", rr.ErrorCode)
	}
}

func TestAlterConfigsIsFullReplacement(t *testing.T) {
	n, dq := newTestNode(t, nil)
	c := testConn(t, n)
	createTopics(t, n, c, 5, false, createSpec{"orders", 3, 1, map[string]string{"retention.ms": "86400000", "cleanup.policy": "compact,delete"}})
	req := kmsg.NewPtrAlterConfigsRequest()
	req.Version = 2
	r := kmsg.NewAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "orders"
	r.Configs = []kmsg.AlterConfigsRequestResourceConfig{{Name: "cleanup.policy", Value: strp("delete")}}
	req.Resources = append(req.Resources, r)
	if rr := call[*kmsg.AlterConfigsResponse](t, n, c, req).Resources[0]; rr.ErrorCode != 0 {
		t.Fatalf("%d %v", rr.ErrorCode, rr.ErrorMessage)
	}
	if got := fmt.Sprint(configValues(describeTopicConfigs(t, n, c, "orders"))); got != "map[cleanup.policy:delete compression.type:producer max.message.bytes:1048588 retention.ms:-1]" {
		t.Fatalf("unnamed retention.ms was not reset: %s", got)
	}
	if body := dq.lastBody("POST /api/v1/configure"); body["retentionEnabled"] != false {
		t.Fatalf("retentionEnabled must be stated false: %v", body)
	}

	// validate_only changes nothing; segment.bytes below Kafka's 1 MiB floor is refused.
	configures := dq.count("POST /api/v1/configure")
	req.ValidateOnly = true
	req.Resources[0].Configs = []kmsg.AlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: strp("5000")}}
	if rr := call[*kmsg.AlterConfigsResponse](t, n, c, req).Resources[0]; rr.ErrorCode != 0 || dq.count("POST /api/v1/configure") != configures {
		t.Fatalf("validate_only: %d", rr.ErrorCode)
	}
	req.ValidateOnly = false
	req.Resources[0].Configs = []kmsg.AlterConfigsRequestResourceConfig{{Name: "segment.bytes", Value: strp("5000")}}
	if rr := call[*kmsg.AlterConfigsResponse](t, n, c, req).Resources[0]; rr.ErrorCode != kerr.InvalidConfig.Code {
		t.Fatalf("invalid segment.bytes: %d", rr.ErrorCode)
	}
	req.Resources[0].ResourceType = kmsg.ConfigResourceTypeBroker
	if rr := call[*kmsg.AlterConfigsResponse](t, n, c, req).Resources[0]; rr.ErrorCode != kerr.InvalidRequest.Code || rr.ErrorMessage == nil {
		t.Fatalf("broker alter: %d", rr.ErrorCode)
	}
}

// A record left behind by a queue deleted and recreated outside the facade
// carries the old queue id: the topic is no longer the facade's to alter.
func TestAlterRefusesRecordOfAnotherQueue(t *testing.T) {
	n, dq := newTestNode(t, nil)
	c := testConn(t, n)
	createTopics(t, n, c, 5, false, createSpec{"orders", 3, 1, nil})
	if _, err := dq.q.DeleteQueue(t.Context(), "orders"); err != nil {
		t.Fatal(err)
	}
	dq.addQueue("orders", 1)
	withClock(n).Advance(time.Hour)
	rr := incrementalAlter(t, n, c, "orders", kmsg.IncrementalAlterConfigOpSet, "retention.ms", strp("60000"))
	if rr.ErrorCode != kerr.PolicyViolation.Code || rr.ErrorMessage == nil {
		t.Fatalf("%d %v", rr.ErrorCode, rr.ErrorMessage)
	}
	if w, _, _ := n.cats.TopicWidth(t.Context(), callerOf(c), "orders"); w != 4 {
		t.Fatalf("the stale record's floor applied: width %d", w)
	}
}

func TestAclsAnswerSecurityDisabled(t *testing.T) {
	n, _ := newTestNode(t, nil)
	c := testConn(t, n)
	d := kmsg.NewPtrDescribeACLsRequest()
	d.Version = 3
	if r := call[*kmsg.DescribeACLsResponse](t, n, c, d); r.ErrorCode != kerr.SecurityDisabled.Code || r.ErrorMessage == nil {
		t.Fatalf("describe: %d", r.ErrorCode)
	}
	cr := kmsg.NewPtrCreateACLsRequest()
	cr.Version = 1
	if r := call[*kmsg.CreateACLsResponse](t, n, c, cr); len(r.Results) != 0 {
		t.Fatalf("no creations, %d results", len(r.Results))
	}
	cr.Creations = make([]kmsg.CreateACLsRequestCreation, 2)
	r := call[*kmsg.CreateACLsResponse](t, n, c, cr)
	if len(r.Results) != 2 || r.Results[0].ErrorCode != kerr.SecurityDisabled.Code || r.Results[1].ErrorCode != kerr.SecurityDisabled.Code {
		t.Fatalf("create: %+v", r.Results)
	}
	dl := kmsg.NewPtrDeleteACLsRequest()
	dl.Version = 2
	dl.Filters = make([]kmsg.DeleteACLsRequestFilter, 3)
	dr := call[*kmsg.DeleteACLsResponse](t, n, c, dl)
	if len(dr.Results) != 3 || dr.Results[2].ErrorCode != kerr.SecurityDisabled.Code || dr.Results[2].MatchingACLs == nil {
		t.Fatalf("delete: %+v", dr.Results)
	}
}

// TestAlterPreprocessTouchesNoQueue: an alter Kafka's preprocessing
// refuses (package configres) is answered with its INVALID_REQUEST and
// sentence, by both alter APIs, before a queue is configured; the same
// request without the fault is applied.
func TestAlterPreprocessTouchesNoQueue(t *testing.T) {
	n, dq := newTestNode(t, nil)
	c := testConn(t, n)
	createTopics(t, n, c, 5, false, createSpec{"orders", 3, 1, nil})
	incremental := func(op kmsg.IncrementalAlterConfigOp, value *string, names ...string) []kmsg.IncrementalAlterConfigsResponseResource {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.Version = 1
		for _, name := range names {
			rr := kmsg.NewIncrementalAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, name
			cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			cfg.Name, cfg.Op, cfg.Value = "retention.ms", op, value
			rr.Configs = append(rr.Configs, cfg)
			req.Resources = append(req.Resources, rr)
		}
		return call[*kmsg.IncrementalAlterConfigsResponse](t, n, c, req).Resources
	}
	legacy := kmsg.NewPtrAlterConfigsRequest()
	legacy.Version = 2
	r := kmsg.NewAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "orders"
	r.Configs = []kmsg.AlterConfigsRequestResourceConfig{{Name: "retention.ms"}}
	legacy.Resources = append(legacy.Resources, r)
	configures := dq.count("POST /api/v1/configure")
	set := kmsg.IncrementalAlterConfigOpSet
	lr := call[*kmsg.AlterConfigsResponse](t, n, c, legacy).Resources[0]
	for want, rr := range map[string]kmsg.IncrementalAlterConfigsResponseResource{
		"Unknown operations type 9":                   incremental(9, strp("60000"), "orders")[0],
		"Null value not supported for : retention.ms": incremental(set, nil, "orders")[0],
		"Each resource must appear at most once.":     incremental(set, strp("60000"), "orders", "orders")[1],
	} {
		if rr.ErrorCode != kerr.InvalidRequest.Code || rr.ErrorMessage == nil || *rr.ErrorMessage != want {
			t.Errorf("want %q: %d %v", want, rr.ErrorCode, rr.ErrorMessage)
		}
	}
	if lr.ErrorCode != kerr.InvalidRequest.Code || lr.ErrorMessage == nil || *lr.ErrorMessage != "Null value not supported for : retention.ms" {
		t.Errorf("legacy null: %d %v", lr.ErrorCode, lr.ErrorMessage)
	}
	if got := dq.count("POST /api/v1/configure"); got != configures {
		t.Fatalf("a refused alter configured the queue (%d calls)", got-configures)
	}
	if rr := incremental(set, strp("60000"), "orders")[0]; rr.ErrorCode != 0 {
		t.Fatalf("valid alter: %d %v", rr.ErrorCode, rr.ErrorMessage)
	}
}
