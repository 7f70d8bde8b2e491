package contract

import (
	"encoding/json"
	"testing"

	"github.com/queen-mq/queen-kafka/queen"
)

// groupRows is GET /api/v1/consumer-groups, checked to be a JSON array of
// objects; rows are returned by "name@queueName".
func groupRows(t testing.TB, p *devProc, authz string) map[string]json.RawMessage {
	t.Helper()
	r := p.raw(t, "GET", "/api/v1/consumer-groups", authz, "")
	if r.Status != 200 {
		t.Fatalf("consumer groups: %d %s", r.Status, r.Body)
	}
	var rows []json.RawMessage
	if err := json.Unmarshal(r.Body, &rows); err != nil {
		t.Fatalf("not a JSON array: %v: %s", err, r.Body)
	}
	out := map[string]json.RawMessage{}
	for _, row := range rows {
		var id struct{ Name, QueueName string }
		if err := json.Unmarshal(row, &id); err != nil {
			t.Fatalf("row %s: %v", row, err)
		}
		out[id.Name+"@"+id.QueueName] = row
	}
	return out
}

// kafkaRow is the list view's row for a Kafka group on one queue whose
// every partition has a commit and no record older than 300 s is unread.
func kafkaRow(group, queue string, cursors, lagging, lag int) string {
	b, _ := json.Marshal(map[string]any{
		"name": group, "topics": []string{queue}, "queueName": queue, "members": cursors, "partitionCursors": cursors,
		"partitionsWithLag": lagging, "totalLag": lag, "maxTimeLag": 0, "state": "Stable", "storage": "segments",
		"subscriptionMode": nil, "subscriptionTimestamp": nil, "subscriptionCreatedAt": nil, "conflation": false, "kind": "kafka",
	})
	return string(b)
}

// queen-api-consume.md §6 and queen-api.md §10: Kafka groups appear in the
// list view, one row per (group, queue) with kind "kafka", read from the
// qk:group: rows the facade writes (a plain KV put or a transaction's KV
// rider, as OffsetCommit and TxnOffsetCommit write them), with lag = log
// end − committed offset per partition.
func TestConsumerGroupsListKafkaGroups(t *testing.T) {
	c := shared.client(t, "")
	q, g, tg := uniq("orders"), uniq("billing"), uniq("txn:group")
	pushN(t, c, q, "0", 10)
	pushN(t, c, q, "1", 4)
	must[[]queen.KVResult](t)(c.KV(ctx, []queen.KVOp{
		kvPut(queen.GroupOffsetKey(g, q, 0), map[string]any{"offset": 10, "metadata": "", "ts": 1787824800123}, nil),
		kvPut(queen.GroupOffsetKey(g, q, 1), map[string]any{"offset": 1, "metadata": "", "ts": 1787824800123}, nil),
		kvPut(queen.PrefixGroups+queen.Esc(g), map[string]any{"pt": "consumer", "ts": 1787824800123}, nil),
	}))
	must[[]queen.KVResult](t)(c.Transaction(ctx, queen.TxnRequest{
		Operations: []queen.TxnOperation{{Type: "push", Items: []queen.PushItem{{Queue: q, Partition: "1", Payload: env("", "tx", -1)}}}},
		KV:         []queen.KVOp{kvPut(queen.GroupOffsetKey(tg, q, 0), map[string]any{"offset": 4, "metadata": "", "ts": 1787824800200}, nil)},
	}))
	rows := groupRows(t, shared, "")
	jsonEq(t, rows[g+"@"+q], []byte(kafkaRow(g, q, 2, 1, 4)))   // partition 1: end 5 − 1
	jsonEq(t, rows[tg+"@"+q], []byte(kafkaRow(tg, q, 1, 1, 6))) // partition 0: end 10 − 4
}

// The rows are read from what is stored: after a restart on the same data
// directory the view is the same. Reading needs the read level, and each
// tenant sees its own commits against its own queues only.
func TestConsumerGroupsDurableAndScoped(t *testing.T) {
	p := startDev(t, "", map[string]string{"QUEEN_DEV_TOKENS": "tokA=tenantA,tokB=tenantB,tokR=tenantA:ro,tokW=tenantA:wo"})
	a, b := p.client(t, "tokA"), p.client(t, "tokB")
	pushN(t, a, "orders", "0", 10)
	pushN(t, b, "orders", "0", 3)
	must[[]queen.KVResult](t)(a.KV(ctx, []queen.KVOp{kvPut(queen.GroupOffsetKey("g", "orders", 0), map[string]any{"offset": 7}, nil)}))
	must[[]queen.KVResult](t)(b.KV(ctx, []queen.KVOp{kvPut(queen.GroupOffsetKey("g", "nosuchqueue", 0), map[string]any{"offset": 0}, nil)}))
	check := func() {
		t.Helper()
		rows := groupRows(t, p, "Bearer tokR")
		if len(rows) != 1 {
			t.Fatalf("tenant A rows: %v", rows)
		}
		jsonEq(t, rows["g@orders"], []byte(kafkaRow("g", "orders", 1, 1, 3)))
		if rows := groupRows(t, p, "Bearer tokB"); len(rows) != 0 {
			t.Fatalf("tenant B sees %v", rows)
		}
	}
	check()
	p.Kill()
	if err := p.launch(); err != nil {
		t.Fatal(err)
	}
	check()
	for authz, want := range map[string]int{"": 401, "Bearer nope": 401, "Bearer tokW": 403} {
		if r := p.raw(t, "GET", "/api/v1/consumer-groups", authz, ""); r.Status != want {
			t.Errorf("%q: %d %s, want %d", authz, r.Status, r.Body, want)
		}
	}
}
