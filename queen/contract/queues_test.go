package contract

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/queen-mq/queen-kafka/queen"
)

// §2 + §3 example: configure, then the catalog lists the queue with 0
// partitions until messages arrive; partitions count only written ones.
func TestQueuesLivePartitionCounts(t *testing.T) {
	c := shared.client(t, "")
	q := uniq("orders")
	must[*queen.ConfigureResult](t)(c.Configure(ctx, q, nil))
	info, ok := findQueue(t, c, q)
	if !ok || info.Partitions != 0 || info.ID == "" {
		t.Fatalf("fresh queue: %+v %v (want 0 partitions and an id)", info, ok)
	}
	pushN(t, c, q, "0", 1)
	pushN(t, c, q, "3", 2)
	pushN(t, c, q, "Default", 1) // non-numeric partition names count too
	info, _ = findQueue(t, c, q)
	if info.Partitions != 3 {
		t.Fatalf("partitions = %d, want 3", info.Partitions)
	}
	// The raw answer is an object with a queues array; the facade sends no query.
	r := shared.raw(t, "GET", "/api/v1/resources/queues", "", "")
	if r.Status != 200 || !strings.Contains(string(r.Body), `"queues":[`) {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	for _, q := range r.json(t)["queues"].([]any) {
		m := q.(map[string]any)
		if _, ok := m["name"].(string); !ok {
			t.Fatalf("queue without name: %v", m)
		}
		if p, ok := m["partitions"].(float64); !ok || p != float64(int64(p)) {
			t.Fatalf("partitions not an integer: %v", m)
		}
	}
	// stats=cached and filters are accepted.
	if r := shared.raw(t, "GET", "/api/v1/resources/queues?stats=cached&namespace=x", "", ""); r.Status != 200 {
		t.Fatalf("query string refused: %d %s", r.Status, r.Body)
	}
}

var defaultOptions = `{"priority":0,"leaseTime":300,"retryLimit":3,"retryDelay":1000,"maxSize":0,"ttl":3600,
 "deadLetterQueue":true,"dlqAfterMaxRetries":true,"delayedProcessing":0,"windowBuffer":0,
 "retentionSeconds":0,"completedRetentionSeconds":0,"retentionEnabled":false,
 "encryptionEnabled":false,"maxWaitTimeSeconds":0,"minPopWaitTime":0,"dedupWindowSeconds":3600,
 "retentionSinkHold":"","retentionSinkHoldMaxSeconds":604800}`

func withOpts(t *testing.T, base string, set map[string]any) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(base), &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range set {
		m[k] = v
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// §3 example replayed exactly, then merge / null / replace semantics.
func TestConfigureExampleAndMerge(t *testing.T) {
	c := shared.client(t, "")
	q := uniq("orders")
	res := must[*queen.ConfigureResult](t)(c.Configure(ctx, q, map[string]any{"retentionEnabled": true, "retentionSeconds": 604800}))
	if !res.Configured || res.Queue != q || res.Namespace != "" || res.Task != "" {
		t.Fatalf("%+v", res)
	}
	want := withOpts(t, defaultOptions, map[string]any{"retentionEnabled": true, "retentionSeconds": 604800})
	jsonEq(t, res.Options, []byte(want))

	// merge: absent keeps, value sets.
	res = must[*queen.ConfigureResult](t)(c.Configure(ctx, q, map[string]any{"ttl": 10, "namespace": "ns1"}))
	want = withOpts(t, want, map[string]any{"ttl": 10})
	jsonEq(t, res.Options, []byte(want))
	if res.Namespace != "ns1" {
		t.Fatalf("namespace %q", res.Namespace)
	}
	// explicit null resets to the default.
	res = must[*queen.ConfigureResult](t)(c.Configure(ctx, q, map[string]any{"ttl": nil}))
	want = withOpts(t, want, map[string]any{"ttl": 3600})
	jsonEq(t, res.Options, []byte(want))
	// nested options bag: top-level option keys are ignored.
	res = must[*queen.ConfigureResult](t)(c.Configure(ctx, q, map[string]any{"options": map[string]any{"priority": 5}, "retryLimit": 9}))
	want = withOpts(t, want, map[string]any{"priority": 5})
	jsonEq(t, res.Options, []byte(want))
	// replace resets every key not given.
	res = must[*queen.ConfigureResult](t)(c.Configure(ctx, q, map[string]any{"mode": "replace", "retentionEnabled": true}))
	want = withOpts(t, defaultOptions, map[string]any{"retentionEnabled": true})
	jsonEq(t, res.Options, []byte(want))
	// mode null = merge.
	res = must[*queen.ConfigureResult](t)(c.Configure(ctx, q, map[string]any{"mode": nil, "maxSize": 7}))
	want = withOpts(t, want, map[string]any{"maxSize": 7})
	jsonEq(t, res.Options, []byte(want))
	// still one queue, no partitions.
	if info, ok := findQueue(t, c, q); !ok || info.Partitions != 0 {
		t.Fatalf("%+v %v", info, ok)
	}
}

func TestConfigureErrors(t *testing.T) {
	c := shared.client(t, "")
	q := uniq("cfgerr")
	_, err := c.Configure(ctx, q, map[string]any{"mode": "upsert"})
	mustKind(t, err, queen.KindBadRequest)
	for name, body := range map[string]string{
		"no queue":      `{"retentionEnabled":true}`,
		"queue null":    `{"queue":null}`,
		"queue number":  `{"queue":5}`,
		"bad json":      `{"queue":`,
		"not an object": `["q"]`,
		"bad mode":      `{"queue":"` + q + `","mode":"upsert"}`,
		"mode number":   `{"queue":"` + q + `","mode":1}`,
		"option type":   `{"queue":"` + q + `","retentionSeconds":"forever"}`,
		"control char":  `{"queue":"a\u0001b"}`,
	} {
		t.Run(name, func(t *testing.T) {
			r := shared.raw(t, "POST", "/api/v1/configure", "", body)
			if r.Status != 400 {
				t.Fatalf("status %d %s", r.Status, r.Body)
			}
			if _, ok := r.json(t)["error"].(string); !ok {
				t.Fatalf("no error message: %s", r.Body)
			}
		})
	}
	if _, ok := findQueue(t, c, q); ok {
		t.Fatal("a refused configure created the queue")
	}
}

// §4: delete example, idempotence, KV untouched, recreation restarts at 0.
func TestDeleteQueue(t *testing.T) {
	c := shared.client(t, "")
	q := uniq("orders")
	pushN(t, c, q, "0", 3)
	before, _ := findQueue(t, c, q)
	cfgKey := queen.TopicCfgKey(q)
	must[[]queen.KVResult](t)(c.KV(ctx, []queen.KVOp{kvPut(cfgKey, map[string]any{"qid": before.ID}, nil)}))

	res := must[*queen.DeleteResult](t)(c.DeleteQueue(ctx, q))
	if !res.Deleted || !res.Existed {
		t.Fatalf("%+v", res)
	}
	if _, ok := findQueue(t, c, q); ok {
		t.Fatal("queue still listed")
	}
	if f := fetchOne(t, c, q, "0", 0); f.Error != queen.FetchErrUnknownTopic {
		t.Fatalf("fetch after delete: %+v", f)
	}
	r := shared.raw(t, "DELETE", "/api/v1/resources/queues/"+q, "", "")
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	m := r.json(t)
	if m["deleted"] != false || m["existed"] != false || m["message"] != "Queue not found, nothing was deleted" {
		t.Fatalf("second delete: %s", r.Body)
	}
	kv := must[[]queen.KVResult](t)(c.KV(ctx, []queen.KVOp{kvGet(cfgKey)}))
	if len(kv[0].Rows) != 1 {
		t.Fatalf("queue delete touched KV: %+v", kv[0])
	}
	if off := pushN(t, c, q, "0", 1); off[0] != 0 {
		t.Fatalf("recreated queue starts at %d", off[0])
	}
	after, _ := findQueue(t, c, q)
	if after.ID == "" || after.ID == before.ID {
		t.Fatalf("recreated queue id %q (before %q)", after.ID, before.ID)
	}
	// A percent-encoded segment names the queue it decodes to.
	q2 := uniq("a.b_c-d")
	pushN(t, c, q2, "0", 1)
	if r := shared.raw(t, "DELETE", "/api/v1/resources/queues/"+strings.ReplaceAll(q2, "-", "%2D"), "", ""); r.Status != 200 || r.json(t)["deleted"] != true {
		t.Fatalf("escaped segment: %d %s", r.Status, r.Body)
	}
}
