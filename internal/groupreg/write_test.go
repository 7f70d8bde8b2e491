package groupreg

import (
	"context"
	"errors"
	"testing"

	"github.com/queen-mq/queen-kafka/internal/testsupport/memkv"
	"github.com/queen-mq/queen-kafka/queen"
)

// TestWriteLeadsEveryCall: ops beyond one call's ceiling go in several
// calls, each led by the meta row's compare-and-set; a writer whose meta
// version is stale loses with ErrLost and writes nothing; the fence leads
// the first call.
func TestWriteLeadsEveryCall(t *testing.T) {
	kv := memkv.New()
	ctx := context.Background()
	meta := queen.KVOp{Op: queen.OpPut, NS: queen.Namespace, Key: "qk:test:g", Value: []byte(`{}`), Forever: true}
	var ops []queen.KVOp
	for i := range 600 {
		ops = append(ops, queen.KVOp{Op: queen.OpPut, NS: queen.Namespace, Key: "qk:test:m:" + string(rune('a'+i%26)) + string(rune('a'+i/26)), Value: []byte(`1`), Forever: true})
	}
	ver := int64(-1)
	if err := Write(ctx, kv, "g", meta, &ver, &queen.FenceValue{Node: 1}, ops); err != nil {
		t.Fatal(err)
	}
	if _, v, _ := kv.Row("qk:test:g"); v != ver || ver < 3 {
		t.Fatalf("meta version %d, written %d: one put a call", v, ver)
	}
	if _, _, ok := kv.Row(queen.FenceKey("g")); !ok {
		t.Fatal("no fence")
	}
	if n := len(kv.Keys("qk:test:m:")); n != 600 {
		t.Fatalf("%d member rows", n)
	}
	stale := ver - 1
	err := Write(ctx, kv, "g", meta, &stale, nil, []queen.KVOp{{Op: queen.OpPut, NS: queen.Namespace, Key: "qk:test:x", Value: []byte(`1`), Forever: true}})
	if !errors.Is(err, ErrLost) {
		t.Fatalf("stale writer: %v", err)
	}
	if _, _, ok := kv.Row("qk:test:x"); ok {
		t.Fatal("a lost write applied its ops")
	}
}
