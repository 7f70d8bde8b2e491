package dev

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/queen"
)

const defaultEcho = `{"priority":0,"leaseTime":300,"retryLimit":3,"retryDelay":1000,"maxSize":0,"ttl":3600,` +
	`"deadLetterQueue":true,"dlqAfterMaxRetries":true,"delayedProcessing":0,"windowBuffer":0,` +
	`"retentionSeconds":%s,"completedRetentionSeconds":0,"retentionEnabled":%s,` +
	`"encryptionEnabled":false,"maxWaitTimeSeconds":0,"minPopWaitTime":0,"dedupWindowSeconds":%s,` +
	`"retentionSinkHold":"","retentionSinkHoldMaxSeconds":604800}`

func echo(ret, enabled, dedup string) string {
	r := strings.Replace(defaultEcho, "%s", ret, 1)
	r = strings.Replace(r, "%s", enabled, 1)
	return strings.Replace(r, "%s", dedup, 1)
}

// The §3 example exchange, verbatim.
func TestConfigureContractExample(t *testing.T) {
	e := newEnv(t, Options{})
	st, raw := e.post("/api/v1/configure", `{"queue":"orders","retentionEnabled":true,"retentionSeconds":604800}`)
	wantStatus(t, st, raw, 200)
	want := `{"configured":true,"queue":"orders","namespace":"","task":"","options":` + echo("604800", "true", "3600") + `}`
	if string(raw) != want {
		t.Errorf("got  %s\nwant %s", raw, want)
	}
	qs, err := e.qc.Queues(ctx(t))
	if err != nil || len(qs) != 1 || qs[0].Partitions != 0 || qs[0].Name != "orders" || len(qs[0].ID) != 36 {
		t.Errorf("fresh queue listed as %+v %v", qs, err)
	}
}

func TestConfigureMergeReplaceNull(t *testing.T) {
	e := newEnv(t, Options{})
	c := ctx(t)
	opts := func(r *queen.ConfigureResult) map[string]any {
		var m map[string]any
		if err := json.Unmarshal(r.Options, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if _, err := e.qc.Configure(c, "q", map[string]any{"retentionEnabled": true, "retentionSeconds": 60, "namespace": "ns1"}); err != nil {
		t.Fatal(err)
	}
	r, err := e.qc.Configure(c, "q", map[string]any{"dedupWindowSeconds": 10})
	if err != nil {
		t.Fatal(err)
	}
	if m := opts(r); m["retentionEnabled"] != true || m["retentionSeconds"] != 60.0 || m["dedupWindowSeconds"] != 10.0 || r.Namespace != "ns1" {
		t.Errorf("merge lost options: %s ns %q", r.Options, r.Namespace)
	}
	r, err = e.qc.Configure(c, "q", map[string]any{"retentionSeconds": nil})
	if err != nil {
		t.Fatal(err)
	}
	if m := opts(r); m["retentionSeconds"] != 0.0 || m["retentionEnabled"] != true {
		t.Errorf("null must reset one key: %s", r.Options)
	}
	r, err = e.qc.Configure(c, "q", map[string]any{"mode": "replace", "ttl": 5})
	if err != nil {
		t.Fatal(err)
	}
	if m := opts(r); m["retentionEnabled"] != false || m["dedupWindowSeconds"] != 3600.0 || m["ttl"] != 5.0 || r.Namespace != "" {
		t.Errorf("replace must reset unspecified keys: %s", r.Options)
	}
	// Nested options win over top-level keys; non-empty top-level
	// namespace is folded in when the bag lacks it.
	st, raw := e.post("/api/v1/configure", `{"queue":"q","ttl":99,"namespace":"top","options":{"ttl":7,"task":"t"}}`)
	v := wantStatus(t, st, raw, 200)
	if num(field(v, "options", "ttl")) != 7 || field(v, "namespace") != "top" || field(v, "task") != "t" {
		t.Errorf("nested: %s", raw)
	}
	st, raw = e.post("/api/v1/configure", `{"queue":"q","retryLimit":9,"options":{"priority":5}}`)
	v = wantStatus(t, st, raw, 200)
	if num(field(v, "options", "retryLimit")) != 3 || num(field(v, "options", "priority")) != 5 {
		t.Errorf("top-level option keys must be ignored beside a bag: %s", raw)
	}
	qs, _ := e.qc.Queues(c)
	if len(qs) != 1 {
		t.Errorf("configure of an existing queue created another: %+v", qs)
	}
}

func TestConfigureRefusals(t *testing.T) {
	e := newEnv(t, Options{})
	cases := map[string]struct {
		body, want string
	}{
		"no queue":      {`{}`, `{"error":"queue is required"}`},
		"null queue":    {`{"queue":null}`, `{"error":"queue is required"}`},
		"bad mode":      {`{"queue":"q","mode":"upsert"}`, `{"error":"mode must be \"merge\" or \"replace\", got \"upsert\""}`},
		"bad int":       {`{"queue":"q","ttl":"long"}`, `{"error":"invalid option ttl: must be an integer","invalid":"ttl"}`},
		"float int":     {`{"queue":"q","retentionSeconds":1.5}`, `{"error":"invalid option retentionSeconds: must be an integer","invalid":"retentionSeconds"}`},
		"bad bool":      {`{"queue":"q","retentionEnabled":"yes"}`, `{"error":"invalid option retentionEnabled: must be a boolean","invalid":"retentionEnabled"}`},
		"negative":      {`{"queue":"q","options":{"dedupWindowSeconds":-1}}`, `{"error":"invalid option dedupWindowSeconds: must not be negative, got -1","invalid":"dedupWindowSeconds"}`},
		"malformed":     {`{"queue":`, ``},
		"array":         {`[]`, ``},
		"options array": {`{"queue":"q","options":[1]}`, ``},
		"queue number":  {`{"queue":5}`, ``},
	}
	for name, c := range cases {
		before := e.b.Mutations()
		st, raw := e.post("/api/v1/configure", c.body)
		v := wantStatus(t, st, raw, 400)
		if c.want != "" && string(raw) != c.want {
			t.Errorf("%s: got %s want %s", name, raw, c.want)
		}
		if s, _ := field(v, "error").(string); s == "" {
			t.Errorf("%s: no error in %s", name, raw)
		}
		if e.b.Mutations() != before {
			t.Errorf("%s: refused configure wrote something", name)
		}
	}
}

func TestDeleteQueue(t *testing.T) {
	e := newEnv(t, Options{})
	c := ctx(t)
	e.pushN("a/b c", "0", 3)
	if _, err := e.qc.KV(c, []queen.KVOp{put(queen.TopicCfgKey("a"), `{}`)}); err != nil {
		t.Fatal(err)
	}
	qs, _ := e.qc.Queues(c)
	oldID := qs[0].ID
	d, err := e.qc.DeleteQueue(c, "a/b c")
	if err != nil || !d.Deleted || !d.Existed {
		t.Fatalf("delete: %+v %v", d, err)
	}
	st, raw, _ := e.do("DELETE", "/api/v1/resources/queues/a%2Fb%20c", "", "")
	wantStatus(t, st, raw, 200)
	if string(raw) != `{"deleted":false,"existed":false,"message":"Queue not found, nothing was deleted"}` {
		t.Errorf("second delete: %s", raw)
	}
	fr, _ := e.qc.Fetch(c, queen.FetchRequest{Entries: []queen.FetchEntry{{Queue: "a/b c", Partition: "0", Offset: 0}}})
	if fr[0].Error != queen.FetchErrUnknownTopic {
		t.Errorf("deleted queue fetch: %+v", fr[0])
	}
	// Recreate: new id, offsets restart at 0; KV untouched.
	res := e.pushN("a/b c", "0", 1)
	if *res[0].Offset != 0 {
		t.Errorf("recreated queue offset %d", *res[0].Offset)
	}
	qs, _ = e.qc.Queues(c)
	if qs[0].ID == oldID || qs[0].Partitions != 1 {
		t.Errorf("recreated queue %+v (old id %s)", qs[0], oldID)
	}
	kv, _ := e.qc.KV(c, []queen.KVOp{{Op: queen.OpGet, NS: queen.Namespace, Key: queen.TopicCfgKey("a")}})
	if !*kv[0].Found {
		t.Error("queue delete touched KV")
	}
}

// Retention only raises the log start; offsets are never renumbered.
func TestRetentionSweep(t *testing.T) {
	clk := newFakeClock()
	e := newEnv(t, Options{Now: clk.Now, Dir: t.TempDir()})
	c := ctx(t)
	e.pushN("r", "0", 3)
	clk.Advance(30 * time.Second)
	e.pushN("r", "0", 2)
	e.pushN("keep", "0", 2)
	clk.Advance(45 * time.Second)
	e.b.Sweep()
	fr, _ := e.qc.Fetch(c, queen.FetchRequest{Entries: []queen.FetchEntry{{Queue: "r", Partition: "0", Offset: 0}}})
	if fr[0].LogStartOffset != 0 {
		t.Fatalf("retention without retentionEnabled: lso %d", fr[0].LogStartOffset)
	}
	if _, err := e.qc.Configure(c, "r", map[string]any{"retentionEnabled": true, "retentionSeconds": 60}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.qc.Configure(c, "keep", map[string]any{"retentionEnabled": false, "retentionSeconds": 1}); err != nil {
		t.Fatal(err)
	}
	e.b.Sweep()
	fr, _ = e.qc.Fetch(c, queen.FetchRequest{Entries: []queen.FetchEntry{
		{Queue: "r", Partition: "0", Offset: 0},
		{Queue: "r", Partition: "0", Offset: 3},
		{Queue: "keep", Partition: "0", Offset: 0},
	}})
	if fr[0].Error != queen.FetchErrOutOfRange || fr[0].LogStartOffset != 3 || fr[0].HighWatermark != 5 {
		t.Errorf("below log start: %+v", fr[0])
	}
	if len(fr[1].Records) != 2 || fr[1].Records[0].Offset != 3 {
		t.Errorf("retained records renumbered: %+v", fr[1].Records)
	}
	if len(fr[2].Records) != 2 {
		t.Errorf("retentionEnabled:false expired records")
	}
	clk.Advance(time.Hour)
	e.b.Sweep()
	res := e.pushN("r", "0", 1)
	if *res[0].Offset != 5 {
		t.Errorf("offset after full expiry %d, want 5", *res[0].Offset)
	}
	fr, _ = e.qc.Fetch(c, queen.FetchRequest{Entries: []queen.FetchEntry{{Queue: "r", Partition: "0", Offset: 5}}})
	if fr[0].LogStartOffset != 5 || len(fr[0].Records) != 1 {
		t.Errorf("after expiry: %+v", fr[0])
	}
	qs, _ := e.qc.Queues(c)
	for _, q := range qs {
		if q.Name == "r" && q.Partitions != 1 {
			t.Errorf("emptied partition must still count: %+v", q)
		}
	}
}

// The §2 example's shape: every field of a queue entry, live counts.
func TestQueuesListContractShape(t *testing.T) {
	clk := newFakeClock()
	e := newEnv(t, Options{Now: clk.Now})
	e.pushN("orders", "0", 2)
	e.pushN("orders", "1", 1)
	if _, err := e.qc.Configure(ctx(t), "empty", nil); err != nil {
		t.Fatal(err)
	}
	st, raw, _ := e.do(http.MethodGet, "/api/v1/resources/queues?stats=cached&namespace=x", "", "")
	v := wantStatus(t, st, raw, 200)
	qs := field(v, "queues").([]any)
	if len(qs) != 2 {
		t.Fatalf("%s", raw)
	}
	var orders, empty any
	for _, q := range qs {
		switch field(q, "name") {
		case "orders":
			orders = q
		case "empty":
			empty = q
		}
	}
	want := map[string]int64{"partitions": 2, "retainedBytes": 21}
	for k, n := range want {
		if num(field(orders, k)) != n {
			t.Errorf("orders %s = %v, want %d (%s)", k, field(orders, k), n, raw)
		}
	}
	if num(field(orders, "messages", "total")) != 3 || num(field(orders, "segments", "messages")) != 3 ||
		field(orders, "namespace") != "" || field(orders, "task") != "" || field(orders, "createdAt") != "2026-08-28T09:15:00.123Z" {
		t.Errorf("orders entry %s", raw)
	}
	if num(field(empty, "partitions")) != 0 || field(empty, "id") == field(orders, "id") {
		t.Errorf("empty entry %s", raw)
	}
}

// Absurd option values saturate: they never wrap into "expired".
func TestHugeRetentionAndDedupWindow(t *testing.T) {
	e := newEnv(t, Options{})
	if _, err := e.qc.Configure(ctx(t), "h", map[string]any{"retentionEnabled": true, "retentionSeconds": int64(9e18), "dedupWindowSeconds": int64(9e18)}); err != nil {
		t.Fatal(err)
	}
	item := []queen.PushItem{{Queue: "h", Partition: "0", Payload: json.RawMessage(`1`), TransactionID: "t"}}
	if _, err := e.qc.Push(ctx(t), item); err != nil {
		t.Fatal(err)
	}
	e.b.Sweep()
	res, err := e.qc.Push(ctx(t), item)
	if err != nil || res[0].Status != queen.StatusDuplicate {
		t.Errorf("huge dedup window: %+v %v", res, err)
	}
	fr, _ := e.qc.Fetch(ctx(t), queen.FetchRequest{Entries: []queen.FetchEntry{{Queue: "h", Partition: "0", Offset: 0}}})
	if fr[0].LogStartOffset != 0 || len(fr[0].Records) != 1 {
		t.Errorf("huge retention expired records: %+v", fr[0])
	}
}
