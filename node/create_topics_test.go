package node

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/catalogue"
	"github.com/queen-mq/queen-kafka/transport"
)

// The declared width is on record before the queue exists, and the
// configure call carries the queue and its retention only.
func TestCreateTopicsRecordsFloorBeforeQueue(t *testing.T) {
	n, dq := newTestNode(t, nil)
	c := testConn(t, n)
	var recordAtConfigure *catalogue.Record
	dq.setFault(func(r *http.Request) (int, string, string) {
		if r.Method == http.MethodPost && r.URL.Path == "/api/v1/configure" {
			rec, _, err := catalogue.ReadRecord(context.Background(), dq.q, "orders")
			if err == nil {
				recordAtConfigure = rec
			}
		}
		return 0, "", ""
	})
	resp := createTopics(t, n, c, 5, false, createSpec{"orders", 3, 1, map[string]string{"retention.ms": "86400000", "segment.bytes": "1048576"}})
	rt := resp.Topics[0]
	if rt.ErrorCode != 0 || rt.NumPartitions != 3 || rt.ReplicationFactor != 1 {
		t.Fatalf("created: %+v", rt)
	}
	if recordAtConfigure == nil || recordAtConfigure.Partitions != 3 {
		t.Fatalf("record at configure time: %+v", recordAtConfigure)
	}
	body := dq.lastBody("POST /api/v1/configure")
	if fmt.Sprint(body) != "map[dedupWindowSeconds:900 queue:orders retentionEnabled:true retentionSeconds:86400]" {
		t.Fatalf("configure body %v", body)
	}
	rec := dq.record("orders")
	q := dq.queue("orders")
	if rec == nil || rec.QID == nil || q == nil || *rec.QID != q.ID || rec.Partitions != 3 || rec.Kafka["retention.ms"] != "86400000" || rec.Kafka["segment.bytes"] != "1048576" {
		t.Fatalf("record %+v, queue %+v", rec, q)
	}
	if w, ok, err := n.cats.TopicWidth(t.Context(), callerOf(c), "orders"); err != nil || !ok || w != 3 {
		t.Fatalf("width %d %v %v", w, ok, err)
	}
	// v5 reports the configs, the stored one too.
	got := map[string]string{}
	for _, cfg := range rt.Configs {
		got[cfg.Name] = *cfg.Value
	}
	if got["retention.ms"] != "86400000" || got["cleanup.policy"] != "delete" || got["compression.type"] != "producer" || got["max.message.bytes"] != "1048588" || got["segment.bytes"] != "1048576" || len(got) != 5 {
		t.Fatalf("configs %v", got)
	}
}

func TestCreateTopicsRetentionMapping(t *testing.T) {
	cases := []struct {
		configs map[string]string
		code    int16
		enabled bool
		secs    float64
	}{
		{map[string]string{"retention.ms": "-1"}, 0, false, 0},
		{map[string]string{}, 0, false, 0},
		{map[string]string{"retention.ms": "1000"}, 0, true, 1},
		{map[string]string{"retention.ms": "1999"}, 0, true, 1},
		{map[string]string{"retention.ms": "604800000", "cleanup.policy": "compact"}, 0, false, 604800},
		{map[string]string{"retention.ms": "604800000", "cleanup.policy": "compact,delete"}, 0, true, 604800},
		{map[string]string{"retention.ms": "604800000", "cleanup.policy": "delete,compact"}, 0, true, 604800},
		{map[string]string{"retention.ms": "999"}, kerr.InvalidConfig.Code, false, 0},
		{map[string]string{"retention.ms": "0"}, kerr.InvalidConfig.Code, false, 0},
		{map[string]string{"retention.ms": "-2"}, kerr.InvalidConfig.Code, false, 0},
		{map[string]string{"retention.ms": "week"}, kerr.InvalidConfig.Code, false, 0},
		{map[string]string{"cleanup.policy": "archive"}, kerr.InvalidConfig.Code, false, 0},
	}
	for i, tc := range cases {
		t.Run(fmt.Sprint(tc.configs), func(t *testing.T) {
			n, dq := newTestNode(t, nil)
			name := fmt.Sprintf("t%d", i)
			rt := createTopics(t, n, testConn(t, n), 4, false, createSpec{name, 1, 1, tc.configs}).Topics[0]
			if rt.ErrorCode != tc.code {
				t.Fatalf("error %d (%v), want %d", rt.ErrorCode, rt.ErrorMessage, tc.code)
			}
			if tc.code != 0 {
				if rt.ErrorMessage == nil || dq.queue(name) != nil {
					t.Fatalf("refused without a message, or created anyway")
				}
				return
			}
			body := dq.lastBody("POST /api/v1/configure")
			if body["retentionEnabled"] != tc.enabled || body["retentionSeconds"] != tc.secs {
				t.Fatalf("configure body %v", body)
			}
		})
	}
}

func TestCreateTopicsValidation(t *testing.T) {
	n, dq := newTestNode(t, nil)
	c := testConn(t, n)
	dq.addQueue("taken", 1)
	resp := createTopics(t, n, c, 5, false,
		createSpec{"bad name", 1, 1, nil},
		createSpec{"__internal", 1, 1, nil},
		createSpec{"..", 1, 1, nil},
		createSpec{strings.Repeat("x", 250), 1, 1, nil},
		createSpec{"zero", 0, 1, nil},
		createSpec{"neg", -2, 1, nil},
		createSpec{"toowide", 100_001, 1, nil},
		createSpec{"rf0", 1, 0, nil},
		createSpec{"taken", 1, 1, nil},
		createSpec{"dup", 1, 1, nil},
		createSpec{"dup", 2, 1, nil},
		createSpec{"defaults", -1, -1, nil},
		createSpec{"rf3", 2, 3, nil},
	)
	want := []int16{
		kerr.InvalidTopicException.Code, kerr.InvalidTopicException.Code, kerr.InvalidTopicException.Code, kerr.InvalidTopicException.Code,
		kerr.InvalidPartitions.Code, kerr.InvalidPartitions.Code, kerr.InvalidPartitions.Code, kerr.InvalidReplicationFactor.Code,
		kerr.TopicAlreadyExists.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, 0, 0,
	}
	for i, rt := range resp.Topics {
		if rt.ErrorCode != want[i] {
			t.Errorf("%s: error %d (%v), want %d", rt.Topic, rt.ErrorCode, rt.ErrorMessage, want[i])
		}
		if want[i] != 0 && rt.ErrorMessage == nil {
			t.Errorf("%s: refused without error_message", rt.Topic)
		}
	}
	if msg := resp.Topics[8].ErrorMessage; msg == nil || *msg != "Topic 'taken' already exists." {
		t.Errorf("exists message %v", msg)
	}
	if d := resp.Topics[11]; d.NumPartitions != 4 || d.ReplicationFactor != 1 {
		t.Errorf("-1/-1 answered %d/%d, want the default width 4 and one broker", d.NumPartitions, d.ReplicationFactor)
	}
	if r := resp.Topics[12]; r.ReplicationFactor != 3 {
		t.Errorf("factor reported %d", r.ReplicationFactor)
	}
	for _, absent := range []string{"__internal", "zero", "dup"} {
		if dq.queue(absent) != nil {
			t.Errorf("%s was created", absent)
		}
	}
	if rec := dq.record("defaults"); rec == nil || rec.Partitions != 4 {
		t.Errorf("default width not recorded: %+v", rec)
	}
}

func TestCreateTopicsManualAssignmentAndValidateOnly(t *testing.T) {
	n, dq := newTestNode(t, nil)
	c := testConn(t, n)
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 4
	tp := kmsg.NewCreateTopicsRequestTopic()
	tp.Topic, tp.NumPartitions, tp.ReplicationFactor = "assigned", -1, -1
	tp.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{0}}}
	req.Topics = append(req.Topics, tp)
	// Broker 0 is the one Metadata lists: Kafka accepts the assignment.
	if rt := call[*kmsg.CreateTopicsResponse](t, n, c, req).Topics[0]; rt.ErrorCode != 0 {
		t.Fatalf("assignment: %d", rt.ErrorCode)
	}
	rt := createTopics(t, n, c, 5, true, createSpec{"dry", 7, 1, nil}).Topics[0]
	if rt.ErrorCode != 0 || rt.NumPartitions != 7 || dq.queue("dry") != nil || dq.record("dry") != nil {
		t.Fatalf("validate_only created something: %+v", rt)
	}
}

func TestCreateTopicsQueenFaults(t *testing.T) {
	cases := []struct {
		name     string
		version  int16
		status   int
		code     int16
		throttle int32
	}{
		{"403", 5, 403, kerr.TopicAuthorizationFailed.Code, 0},
		{"401", 5, 401, kerr.TopicAuthorizationFailed.Code, 0},
		{"429 v6", 6, 429, kerr.ThrottlingQuotaExceeded.Code, 3000},
		{"429 v5", 5, 429, kerr.RequestTimedOut.Code, 3000},
		{"503", 5, 503, kerr.LeaderNotAvailable.Code, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n, dq := newTestNode(t, nil)
			dq.setFault(func(r *http.Request) (int, string, string) {
				if r.URL.Path == "/api/v1/configure" {
					return tc.status, "3", "{\"error\":\"scope produce lacks admin\x1b[31m\"}"
				}
				return 0, "", ""
			})
			resp := createTopics(t, n, testConn(t, n), tc.version, false, createSpec{"orders", 1, 1, nil})
			rt := resp.Topics[0]
			if rt.ErrorCode != tc.code || resp.ThrottleMillis != tc.throttle {
				t.Fatalf("code %d throttle %d", rt.ErrorCode, resp.ThrottleMillis)
			}
			if rt.ErrorMessage == nil || !strings.Contains(*rt.ErrorMessage, "scope produce lacks admin") || strings.Contains(*rt.ErrorMessage, "\x1b") {
				t.Fatalf("message %v", rt.ErrorMessage)
			}
		})
	}
}

// A concurrent creator that wrote the record between our read and write
// owns the topic: the loser answers TOPIC_ALREADY_EXISTS.
func TestCreateTopicsRecordRace(t *testing.T) {
	n, dq := newTestNode(t, nil)
	c := testConn(t, n)
	raced := false
	dq.setFault(func(r *http.Request) (int, string, string) {
		if r.URL.Path != "/api/v1/kv" || raced {
			return 0, "", ""
		}
		ops, _ := dq.lastBody("POST /api/v1/kv")["operations"].([]any)
		if len(ops) == 1 && ops[0].(map[string]any)["op"] == "put" {
			raced = true // the rival writes between our read and our write
			dq.putRow("qk:topiccfg:orders", map[string]any{"qid": nil, "set": map[string]any{}, "at": 1, "partitions": 9})
		}
		return 0, "", ""
	})
	rt := createTopics(t, n, c, 5, false, createSpec{"orders", 1, 1, nil}).Topics[0]
	if rt.ErrorCode != kerr.TopicAlreadyExists.Code {
		t.Fatalf("got %d", rt.ErrorCode)
	}
}

// createAssigned sends CreateTopics v5 for one topic with a manual replica
// assignment (replicas[i] is partition parts[i]'s list).
func createAssigned(t *testing.T, n *Node, c *transport.Conn, topic string, partitions int32, rf int16, parts []int32, replicas ...[]int32) kmsg.CreateTopicsResponseTopic {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 5
	tp := kmsg.NewCreateTopicsRequestTopic()
	tp.Topic, tp.NumPartitions, tp.ReplicationFactor = topic, partitions, rf
	for i, p := range parts {
		tp.ReplicaAssignment = append(tp.ReplicaAssignment, kmsg.CreateTopicsRequestTopicReplicaAssignment{Partition: p, Replicas: replicas[i]})
	}
	req.Topics = append(req.Topics, tp)
	return call[*kmsg.CreateTopicsResponse](t, n, c, req).Topics[0]
}

// TestCreateTopicsManualAssignment: an accepted manual assignment
// (checked by topology.ManualAssignment against the brokers Metadata
// lists) creates the topic, its partition count the width on record and in
// Metadata; a refused one is answered with Kafka's code and sentence and
// creates nothing.
func TestCreateTopicsManualAssignment(t *testing.T) {
	n, dq := newTestNode(t, nil)
	c := testConn(t, n)

	rt := createAssigned(t, n, c, "assigned", -1, -1, []int32{2, 0, 1}, []int32{0}, []int32{0}, []int32{0})
	if rt.ErrorCode != 0 || rt.ErrorMessage != nil || rt.NumPartitions != 3 || rt.ReplicationFactor != 1 {
		t.Fatalf("valid assignment: %d %v width %d factor %d", rt.ErrorCode, rt.ErrorMessage, rt.NumPartitions, rt.ReplicationFactor)
	}
	if dq.queue("assigned") == nil {
		t.Fatal("no queue created")
	}
	if rec := dq.record("assigned"); rec == nil || rec.Partitions != 3 {
		t.Fatalf("width not recorded: %+v", rec)
	}
	if got := len(metadata(t, n, c, 9, false, "assigned").Topics[0].Partitions); got != 3 {
		t.Fatalf("Metadata width %d", got)
	}
	rt = createAssigned(t, n, c, "bad-unknown-broker", -1, -1, []int32{0}, []int32{7, 0})
	if rt.ErrorCode != kerr.InvalidReplicaAssignment.Code || rt.ErrorMessage == nil || *rt.ErrorMessage != "The manual partition assignment includes broker 7, but no such broker is registered." {
		t.Errorf("unknown broker: %d %v", rt.ErrorCode, rt.ErrorMessage)
	}
	if dq.queue("bad-unknown-broker") != nil {
		t.Error("refused assignment created")
	}
}

// TestCreateTopicsManualAssignmentCluster: in cluster mode the registered
// brokers are the live set's ids.
func TestCreateTopicsManualAssignmentCluster(t *testing.T) {
	fq, url := newDevQueen(t)
	n1 := joinedNode(t, url, 1)
	n2 := joinedNode(t, url, 2)
	waitView(t, []int32{1, 2}, n1, n2)
	c := testConn(t, n1)

	rt := createAssigned(t, n1, c, "spread", -1, -1, []int32{0, 1}, []int32{1, 2}, []int32{2, 1})
	if rt.ErrorCode != 0 || rt.NumPartitions != 2 || rt.ReplicationFactor != 2 {
		t.Fatalf("valid assignment: %d %v width %d factor %d", rt.ErrorCode, rt.ErrorMessage, rt.NumPartitions, rt.ReplicationFactor)
	}
	if fq.queue("spread") == nil {
		t.Fatal("no queue created")
	}
	rt = createAssigned(t, n1, c, "bad-absent0", -1, -1, []int32{0, 1}, []int32{0}, []int32{1})
	if rt.ErrorCode != kerr.InvalidReplicaAssignment.Code || rt.ErrorMessage == nil || *rt.ErrorMessage != "The manual partition assignment includes broker 0, but no such broker is registered." {
		t.Errorf("absent0: %d %v", rt.ErrorCode, rt.ErrorMessage)
	}
}

// TestCreateTopicsUnknownConfigName: a config name that is no Kafka topic
// config is refused INVALID_CONFIG with Kafka's LogConfig.validateNames text
// (franz-go's tests create a topic with "kfake.is_internal", which Kafka
// refuses so and the facade created), validate-only too; a Kafka config the
// facade does not apply is still accepted.
func TestCreateTopicsUnknownConfigName(t *testing.T) {
	n, dq := newTestNode(t, nil)
	c := testConn(t, n)
	for _, validateOnly := range []bool{true, false} {
		resp := createTopics(t, n, c, 5, validateOnly,
			createSpec{"internalish", 1, 1, map[string]string{"kfake.is_internal": "true"}},
			createSpec{"typo", 1, 1, map[string]string{"retention.ms": "60000", "retention.msec": "1"}},
			createSpec{"unapplied", 1, 1, map[string]string{"segment.bytes": "1048576", "min.insync.replicas": "2"}},
		)
		for i, name := range []string{"kfake.is_internal", "retention.msec"} {
			rt := resp.Topics[i]
			want := "Unknown topic config name: " + name
			if rt.ErrorCode != kerr.InvalidConfig.Code || rt.ErrorMessage == nil || *rt.ErrorMessage != want {
				t.Errorf("validateOnly %v: %s answered %d %v, want INVALID_CONFIG %q", validateOnly, rt.Topic, rt.ErrorCode, rt.ErrorMessage, want)
			}
			if dq.queue(rt.Topic) != nil {
				t.Errorf("%s was created", rt.Topic)
			}
		}
		if rt := resp.Topics[2]; rt.ErrorCode != 0 {
			t.Errorf("validateOnly %v: Kafka configs the facade does not apply refused %d %v", validateOnly, rt.ErrorCode, rt.ErrorMessage)
		}
	}
}
