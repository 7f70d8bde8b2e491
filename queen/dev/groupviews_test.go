package dev

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"
)

// kafkaCommit writes the facade's committed offset of group on topic/part.
func (e *env) kafkaCommit(group, topic string, part int, off int64) {
	e.t.Helper()
	body, _ := json.Marshal(map[string]any{"operations": []map[string]any{{"op": "put", "ns": "queen-kafka", "forever": true,
		"key": "qk:group:" + group + ":" + topic + ":" + strconv.Itoa(part), "value": map[string]any{"offset": off, "metadata": "", "ts": 1}}}})
	if st, raw := e.post("/api/v1/kv", string(body)); st != 200 {
		e.t.Fatalf("kv: %d %s", st, raw)
	}
}

func TestLaggingAndDetailsBothKinds(t *testing.T) {
	clk := newFakeClock()
	e := newEnv(t, Options{Now: clk.Now})
	e.pushN("t", "0", 4)
	e.pushN("t", "1", 2)
	a := e.pop("/api/v1/pop/queue/t/partition/0?consumerGroup=native&batch=1&leaseSeconds=9000")
	e.kafkaCommit("kgroup", "t", 1, 1)
	e.kafkaCommit("native", "t", 1, 0) // shares the name and the queue: the native entry wins in details
	clk.Advance(2 * time.Hour)

	st, raw, _ := e.do("GET", "/api/v1/consumer-groups/lagging", "", "")
	var rows []map[string]any
	if err := json.Unmarshal(raw, &rows); st != 200 || err != nil {
		t.Fatalf("%d %s", st, raw)
	}
	byKey := map[string]map[string]any{}
	for _, r := range rows {
		byKey[r["consumer_group"].(string)+"/"+r["partition_name"].(string)+"/"+r["kind"].(string)] = r
	}
	q := byKey["native/0/queen"]
	if len(rows) != 3 || q == nil || q["offset_lag"] != 4.0 || q["time_lag_seconds"] != 7200.0 || q["lag_hours"] != 2.0 ||
		q["worker_id"] != a.LeaseID || q["partition_id"] != a.PartitionID || q["queue_name"] != "t" || q["last_consumed_at"] != nil {
		t.Fatalf("lagging: %s", raw)
	}
	if k := byKey["kgroup/1/kafka"]; k == nil || k["offset_lag"] != 1.0 || k["worker_id"] != nil {
		t.Fatalf("kafka row: %s", raw)
	}
	if byKey["native/1/kafka"]["offset_lag"] != 2.0 {
		t.Fatalf("kafka native row: %s", raw)
	}
	st, raw, _ = e.do("GET", "/api/v1/consumer-groups/lagging?minLagSeconds=7200", "", "")
	if v := wantStatus(t, st, raw, 200); len(v.([]any)) != 0 {
		t.Fatalf("lag must exceed the minimum: %s", raw)
	}

	st, raw, _ = e.do("GET", "/api/v1/consumer-groups/native", "", "")
	v := wantStatus(t, st, raw, 200)
	parts := field(v, "t", "partitions").([]any)
	if field(v, "t", "kind") != "queen" || len(parts) != 1 || field(parts[0], "partition") != "0" || field(parts[0], "leaseActive") != true ||
		num(field(parts[0], "offsetLag")) != 4 || num(field(parts[0], "timeLagSeconds")) != 7200 || field(parts[0], "workerId") != a.LeaseID {
		t.Fatalf("details native: %s", raw)
	}
	st, raw, _ = e.do("GET", "/api/v1/consumer-groups/kgroup", "", "")
	if v := wantStatus(t, st, raw, 200); field(v, "t", "kind") != "kafka" || num(field(v, "t", "partitions", 0, "offsetLag")) != 1 {
		t.Fatalf("details kafka: %s", raw)
	}
	st, raw, _ = e.do("GET", "/api/v1/consumer-groups/nobody", "", "")
	if string(raw) != "{}" || st != 200 {
		t.Fatalf("unknown group: %d %s", st, raw)
	}
}

func TestDeleteGroup(t *testing.T) {
	e := newEnv(t, Options{})
	e.pushN("a", "0", 2)
	e.pushN("b", "0", 2)
	e.pop("/api/v1/pop/queue/a?consumerGroup=g&autoAck=true")
	e.pop("/api/v1/pop/queue/b?consumerGroup=g&leaseSeconds=300")
	st, raw, _ := e.do("DELETE", "/api/v1/consumer-groups/g/queues/a", "", "")
	if v := wantStatus(t, st, raw, 200); num(field(v, "deletedPartitions")) != 1 || field(v, "queueName") != "a" || field(v, "metadataDeleted") != true {
		t.Fatalf("per queue: %s", raw)
	}
	if a := e.pop("/api/v1/pop/queue/a?consumerGroup=g&autoAck=true"); a.datas() != `0:{"i":0},0:{"i":1}` {
		t.Fatalf("re-seeded: %s", a.datas())
	}
	st, raw, _ = e.do("DELETE", "/api/v1/consumer-groups/g?deleteMetadata=false", "", "")
	if v := wantStatus(t, st, raw, 200); num(field(v, "deletedPartitions")) != 2 || field(v, "metadataDeleted") != false || field(v, "consumerGroup") != "g" {
		t.Fatalf("all queues: %s", raw)
	}
	// The leased span of b is free again: the cursor and its lease went.
	if a := e.pop("/api/v1/pop/queue/b?consumerGroup=g"); a.datas() != `0:{"i":0},0:{"i":1}` {
		t.Fatalf("after delete: %s", a.datas())
	}
	if n := 0; e.b.scan([]byte{kindLease}, func(k, v []byte) error { n++; return nil }) != nil || n != 1 {
		t.Fatalf("lease rows: %d", n)
	}
}

func TestSeek(t *testing.T) {
	clk := newFakeClock()
	e := newEnv(t, Options{Now: clk.Now})
	e.pushN("s", "0", 2)
	mid := clk.Now().Add(time.Minute)
	clk.Advance(2 * time.Minute)
	e.pushN("s", "0", 1)
	e.pushN("s", "1", 1)
	a := e.pop("/api/v1/pop/queue/s/partition/0?consumerGroup=g&leaseSeconds=300")
	st, raw := e.post("/api/v1/consumer-groups/g/queues/s/seek", `{"timestamp":"`+mid.Format(time.RFC3339Nano)+`"}`)
	if v := wantStatus(t, st, raw, 200); num(field(v, "partitionsUpdated")) != 2 || field(v, "seekToEnd") != false ||
		field(v, "targetTimestamp") != mid.UTC().Format("2006-01-02T15:04:05.000Z") {
		t.Fatalf("seek: %s", raw)
	}
	// The lease was released: its ack is refused, and the pop starts at
	// the first record at or after the timestamp.
	if r := e.ack(ackBody("g", a.Messages[0], "completed", a.LeaseID)); r[0].Success {
		t.Fatalf("ack under the released lease: %+v", r)
	}
	if b := e.pop("/api/v1/pop/queue/s/partition/0?consumerGroup=g&autoAck=true"); b.datas() != `0:{"i":0}` || b.Messages[0].TransactionID == a.Messages[0].TransactionID {
		t.Fatalf("after seek: %s", b.datas())
	}
	st, raw = e.post("/api/v1/consumer-groups/g/queues/s/partitions/1/seek", "")
	if v := wantStatus(t, st, raw, 200); field(v, "updated") != true || field(v, "seekToEnd") != true || field(v, "partitionName") != "1" || field(v, "targetTimestamp") != nil {
		t.Fatalf("partition seek: %s", raw)
	}
	if b := e.pop("/api/v1/pop/queue/s/partition/1?consumerGroup=g"); b != nil {
		t.Fatalf("after seek to end: %s", b.datas())
	}
	for _, c := range []struct {
		path, body string
		status     int
		err        string
	}{
		{"/api/v1/consumer-groups/g/queues/s/seek", `{}`, 400, "Must specify toEnd=true or a timestamp"},
		{"/api/v1/consumer-groups/g/queues/s/seek", `{"toEnd":false}`, 400, "Must specify toEnd=true or a timestamp"},
		{"/api/v1/consumer-groups/g/queues/s/seek", `nope`, 400, "bad body"},
		{"/api/v1/consumer-groups/g/queues/s/seek", ``, 400, "bad body"},
		{"/api/v1/consumer-groups/g/queues/nope/seek", `{"toEnd":true}`, 404, "Queue not found or has no partitions"},
		{"/api/v1/consumer-groups/g/queues/s/partitions/9/seek", `{"toEnd":true}`, 404, "Partition not found"},
	} {
		st, raw := e.post(c.path, c.body)
		if v := wantStatus(t, st, raw, c.status); field(v, "error") != c.err {
			t.Errorf("%s %s: %s", c.path, c.body, raw)
		}
	}
}

// TestListLagSkipsRetiredRecords: the list view counts only records still
// stored, as the per-group and lagging views (and Queen's SQL) do: a group
// that has not read yet is not lagging by what retention retired.
func TestListLagSkipsRetiredRecords(t *testing.T) {
	clk := newFakeClock()
	e := newEnv(t, Options{Now: clk.Now})
	e.pushN("t", "0", 4)
	e.pop("/api/v1/pop/queue/t?consumerGroup=native&batch=1&leaseSeconds=60")
	e.kafkaCommit("kgroup", "t", 0, 0)
	if _, err := e.qc.Configure(ctx(t), "t", map[string]any{"retentionEnabled": true, "retentionSeconds": 1}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Second)
	e.b.Sweep()
	e.pushN("t", "0", 1)

	st, raw, _ := e.do("GET", "/api/v1/consumer-groups", "", "")
	var rows []map[string]any
	if err := json.Unmarshal(raw, &rows); st != 200 || err != nil {
		t.Fatalf("%d %s", st, raw)
	}
	seen := 0
	for _, r := range rows {
		if r["name"] == "native" || r["name"] == "kgroup" {
			seen++
			if r["totalLag"] != 1.0 {
				t.Errorf("%s/%s: totalLag %v, want 1 (the one record stored): %s", r["name"], r["kind"], r["totalLag"], raw)
			}
		}
	}
	if seen != 2 {
		t.Fatalf("rows: %s", raw)
	}
}
