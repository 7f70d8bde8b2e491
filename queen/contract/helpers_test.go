package contract

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"testing"

	"github.com/queen-mq/queen-kafka/envelope"
	"github.com/queen-mq/queen-kafka/queen"
)

var ctx = context.Background()

// tsFormat is §0's record time: UTC, microseconds.
var tsFormat = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$`)

func mustKind(t testing.TB, err error, want queen.Kind) *queen.Error {
	t.Helper()
	if got := queen.KindOf(err); got != want {
		t.Fatalf("kind = %v, want %v (err: %v)", got, want, err)
	}
	var qe *queen.Error
	errors.As(err, &qe)
	return qe
}

func must[T any](t testing.TB) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func rawJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func i64(v int64) *int64 { return &v }

// env builds a payload envelope around value.
func env(key, value string, ts int64) json.RawMessage {
	r := envelope.Record{Value: []byte(value), Timestamp: ts}
	if key != "" {
		r.Key = []byte(key)
	}
	return envelope.Append(nil, &r)
}

// pushN pushes n records to queue/partition in one call and returns offsets.
func pushN(t testing.TB, c *queen.Client, queue, partition string, n int) []int64 {
	t.Helper()
	items := make([]queen.PushItem, n)
	for i := range items {
		items[i] = queen.PushItem{Queue: queue, Partition: partition, Payload: env("", fmt.Sprintf("r%d", i), -1)}
	}
	res, err := c.Push(ctx, items)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int64, n)
	for i, r := range res {
		if r.Status != queen.StatusQueued {
			t.Fatalf("item %d: status %q", i, r.Status)
		}
		out[i] = *r.Offset
	}
	return out
}

// fetchOne reads one entry with maxWaitMs 0.
func fetchOne(t testing.TB, c *queen.Client, queue, partition string, offset int64) queen.FetchResult {
	t.Helper()
	res, err := c.Fetch(ctx, queen.FetchRequest{Entries: []queen.FetchEntry{{Queue: queue, Partition: partition, Offset: offset}}, MinBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	return res[0]
}

func findQueue(t testing.TB, c *queen.Client, name string) (queen.QueueInfo, bool) {
	t.Helper()
	qs, err := c.Queues(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		if q.Name == name {
			return q, true
		}
	}
	return queen.QueueInfo{}, false
}

// kvPut is a forever put, optionally conditional.
func kvPut(key string, value any, expect *int64) queen.KVOp {
	return queen.KVOp{Op: queen.OpPut, NS: queen.Namespace, Key: key, Value: rawJSON(value), Forever: true, Expect: expect}
}

func kvGet(keys ...string) queen.KVOp {
	return queen.KVOp{Op: queen.OpGetMany, NS: queen.Namespace, Keys: keys}
}

// jsonEq compares two JSON texts semantically.
func jsonEq(t testing.TB, got, want []byte) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got is not JSON: %s", got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("want is not JSON: %s", want)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Fatalf("JSON differs\n got %s\nwant %s", got, want)
	}
}
