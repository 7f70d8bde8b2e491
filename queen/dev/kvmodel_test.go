package dev

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/queen-mq/queen-kafka/queen"
)

// TestKVAgainstModel drives random calls (puts and deletes with and
// without expect, some required) and checks every verdict, value and
// version against a plain map, and the store's contents after each call.
func TestKVAgainstModel(t *testing.T) {
	e := newEnv(t, Options{Dir: t.TempDir()})
	type row struct {
		value   string
		version int64
	}
	model := map[string]row{}
	seen := map[int64]bool{}
	rng := rand.New(rand.NewPCG(7, 11))
	keys := []string{"qk:a", "qk:b", "qk:c", "qk:d", "qk:e", "qk:f"}
	for call := 0; call < 300; call++ {
		n := 1 + rng.IntN(4)
		perm := rng.Perm(len(keys))[:n]
		ops := make([]queen.KVOp, n)
		for i, k := range perm {
			key := keys[k]
			o := queen.KVOp{NS: queen.Namespace, Key: key, Required: rng.IntN(4) == 0}
			if rng.IntN(3) == 0 {
				o.Op = queen.OpDelete
			} else {
				o.Op, o.Forever, o.Value = queen.OpPut, true, json.RawMessage(fmt.Sprintf(`"%d-%d"`, call, i))
			}
			switch rng.IntN(3) {
			case 1:
				o.Expect = i64(0)
			case 2:
				v := model[key].version
				if rng.IntN(3) == 0 {
					v += 1000
				}
				if v == 0 {
					v = 1
				}
				o.Expect = i64(v)
			}
			ops[i] = o
		}
		// Expected outcome, in apply order (ascending key).
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		sort.Slice(order, func(a, b int) bool { return ops[order[a]].Key < ops[order[b]].Key })
		failed := -1
		applies := make([]bool, n)
		reasons := make([]string, n)
		for _, i := range order {
			o := ops[i]
			cur, live := model[o.Key]
			reason := ""
			switch {
			case o.Expect != nil && *o.Expect == 0 && live:
				reason = "exists"
			case o.Expect != nil && *o.Expect > 0 && !live:
				reason = "absent"
			case o.Expect != nil && *o.Expect > 0 && cur.version != *o.Expect:
				reason = "version"
			case o.Expect == nil && o.Op == queen.OpDelete && !live:
				reason = "absent"
			}
			applies[i], reasons[i] = reason == "", reason
			if reason != "" && o.Required {
				failed = i
				break
			}
		}
		res, err := e.qc.KV(ctx(t), ops)
		if failed >= 0 {
			var pe *queen.PreconditionError
			if !errors.As(err, &pe) || pe.Index != failed || pe.KVReason != reasons[failed] || pe.Version != model[ops[failed].Key].version {
				t.Fatalf("call %d: want precondition at %d (%s), got %v", call, failed, reasons[failed], err)
			}
		} else {
			if err != nil {
				t.Fatalf("call %d: %v", call, err)
			}
			for i, r := range res {
				o := ops[i]
				if r.Applied != applies[i] || r.Reason != reasons[i] {
					t.Fatalf("call %d op %d %s %s expect %v: applied %v reason %q, model says %v %q", call, i, o.Op, o.Key, o.Expect, r.Applied, r.Reason, applies[i], reasons[i])
				}
				cur, live := model[o.Key]
				switch {
				case !r.Applied:
					if r.Version != cur.version || (live && string(r.Value) != cur.value) {
						t.Fatalf("call %d op %d: verdict carries %d %s, current %d %s", call, i, r.Version, r.Value, cur.version, cur.value)
					}
				case o.Op == queen.OpPut:
					if seen[r.Version] || r.Version <= 0 {
						t.Fatalf("call %d op %d: version %d reissued", call, i, r.Version)
					}
					seen[r.Version] = true
					model[o.Key] = row{string(o.Value), r.Version}
				default:
					delete(model, o.Key)
				}
			}
		}
		got, err := e.qc.KV(ctx(t), []queen.KVOp{{Op: queen.OpGetPrefix, NS: queen.Namespace, Prefix: "qk:"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(got[0].Rows) != len(model) {
			t.Fatalf("call %d: store has %d rows, model %d", call, len(got[0].Rows), len(model))
		}
		for _, r := range got[0].Rows {
			if m := model[r.Key]; m.version != r.Version || m.value != string(r.Value) {
				t.Fatalf("call %d: %s is %d %s, model %d %s", call, r.Key, r.Version, r.Value, m.version, m.value)
			}
		}
	}
}
