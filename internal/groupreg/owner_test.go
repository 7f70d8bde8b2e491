package groupreg

import (
	"context"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/internal/testsupport/memkv"
	"github.com/queen-mq/queen-kafka/queen"
)

// lossyKV loses calls: before they reach the store (a refused call), or
// after (the answer lost: applied, yet the caller sees an error).
type lossyKV struct {
	kv          *memkv.KV
	rng         *rand.Rand
	before, aft bool
}

var errLossy = errors.New("connection reset")

func (l *lossyKV) KV(ctx context.Context, ops []queen.KVOp) ([]queen.KVResult, error) {
	if l.before {
		return nil, errLossy
	}
	res, err := l.kv.KV(ctx, ops)
	if err == nil && l.aft {
		return nil, errLossy
	}
	return res, err
}

// writer is one node's account of the group it believes it owns.
type writer struct {
	owner Owner
	rows  Rows
	model map[string]string // member rows as this writer last wrote them
}

const propGroup = "g"

func propMetaKey() string      { return queen.ConsumerGroupMetaKey(propGroup) }
func propKey(id string) string { return queen.ConsumerGroupMemberKey(propGroup, id) }

// snapshot is every row of the group and its fence: value and version.
func snapshot(kv *memkv.KV) map[string]string {
	out := map[string]string{}
	for _, k := range append(kv.Keys(queen.ConsumerGroupPrefix(propGroup)), kv.Keys(queen.FenceKey(propGroup))...) {
		v, ver, _ := kv.Row(k)
		out[k] = fmt.Sprintf("%s@%d", v, ver)
	}
	return out
}

// TestPropertyOwnerWrite drives several nodes writing one group's rows
// through Owner.Write and Rows, taking it over from each other, against a
// store that refuses calls and loses answers, and checks after every
// write: a write answered nil was led by the meta row's version the store
// had (so the writer's Ver is the stored one after it) and left the member
// rows as the writer marked them; a write that lost its compare-and-set
// (ErrLost) changed no row; a stale writer (another took the group over
// since) never succeeds until it reads the group again; a fenced node's
// first write and its takeovers move the fence to it, no other write does.
func TestPropertyOwnerWrite(t *testing.T) {
	runs := uint64(40)
	if testing.Short() {
		runs = 10
	}
	for seed := uint64(1); seed <= runs; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { ownerRun(t, seed) })
	}
}

func ownerRun(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 848))
	ctx := context.Background()
	store := memkv.New()
	kv := &lossyKV{kv: store, rng: rng}
	now := time.Unix(1_787_824_800, 0)
	var ws []*writer
	for n := range 3 {
		ws = append(ws, &writer{owner: Owner{Fenced: n%2 == 0, NodeID: int32(n), Incarnation: fmt.Sprint("inc", n)}, rows: Rows{Ver: -1}, model: map[string]string{}})
	}
	for step := range 150 {
		i := rng.IntN(len(ws))
		w := ws[i]
		takeover := rng.IntN(4) == 0
		if takeover {
			// A new owner reads the group (as its load does) before its
			// takeover write; a reload after a failed write is the same.
			meta, members, err := Read(ctx, store, queen.ConsumerGroupPrefix(propGroup), propMetaKey())
			if err != nil {
				t.Fatal(err)
			}
			w.rows = Rows{Ver: -1}
			if meta != nil {
				w.rows.Ver = meta.Version
			}
			clear(w.model)
			for _, r := range members {
				w.model[r.Key] = string(r.Value)
			}
			w.rows.MetaDirty = true
		}
		marks := map[string]bool{} // member id -> put (else delete), the last mark winning
		if !takeover {
			n := 1 + rng.IntN(4)
			if rng.IntN(40) == 0 {
				n = 300 // more than one call carries
			}
			for range n {
				id := fmt.Sprint("m", rng.IntN(400))
				if marks[id] = rng.IntN(3) != 0; marks[id] {
					w.rows.Put(id)
				} else {
					w.rows.Delete(id)
				}
			}
		}
		want := maps.Clone(w.model)
		val := fmt.Sprintf(`{"step":%d}`, step)
		ops := w.rows.Ops(propKey, func(string) (any, bool) { return rawJSON(val), true })
		for id, put := range marks {
			if put {
				want[propKey(id)] = val
			} else {
				delete(want, propKey(id))
			}
		}
		kv.before, kv.aft = rng.IntN(8) == 0, rng.IntN(8) == 0
		storedVer := int64(-1)
		if _, v, ok := store.Row(propMetaKey()); ok {
			storedVer = v
		}
		stale := w.rows.Ver != storedVer && !(w.rows.Ver < 0 && storedVer < 0)
		before := snapshot(store)
		meta := Put(propMetaKey(), map[string]int{"step": step})
		verBefore := w.rows.Ver
		err := w.owner.Write(ctx, kv, propGroup, meta, &w.rows, takeover, int32(step), now, ops)
		switch {
		case err == nil:
			if stale {
				t.Fatalf("step %d: writer %d wrote at version %d over the stored %d", step, i, verBefore, storedVer)
			}
			if _, v, _ := store.Row(propMetaKey()); v != w.rows.Ver {
				t.Fatalf("step %d: writer's version %d, stored %d", step, w.rows.Ver, v)
			}
			got := map[string]string{}
			for _, k := range store.Keys(queen.ConsumerGroupPrefix(propGroup) + "m:") {
				v, _, _ := store.Row(k)
				got[k] = string(v)
			}
			if !maps.Equal(got, want) {
				t.Fatalf("step %d: member rows %d, want %d", step, len(got), len(want))
			}
			fence, _, _ := store.Row(queen.FenceKey(propGroup))
			var fv queen.FenceValue
			_ = stdjson.Unmarshal(fence, &fv)
			took := w.owner.Fenced && (takeover || verBefore < 0)
			if took && (fv.Node != w.owner.NodeID || fv.Incarnation != w.owner.Incarnation || fv.Generation != int32(step)) {
				t.Fatalf("step %d: writer %d's first write or takeover left the fence %s", step, i, fence)
			}
			if !took && snapshot(store)[queen.FenceKey(propGroup)] != before[queen.FenceKey(propGroup)] {
				t.Fatalf("step %d: writer %d moved the fence", step, i)
			}
			w.rows.Written()
			w.model = want
		case errors.Is(err, ErrLost):
			if !stale {
				t.Fatalf("step %d: writer %d at the stored version %d lost: %v", step, i, storedVer, err)
			}
			if after := snapshot(store); !maps.Equal(before, after) {
				t.Fatalf("step %d: a lost write changed the rows", step)
			}
		default:
			if !errors.Is(err, errLossy) {
				t.Fatalf("step %d: %v", step, err)
			}
			// The group is dropped; a writer that writes again without
			// reading it first expects it absent.
			w.rows, w.model = Rows{Ver: -1}, map[string]string{}
		}
		if stale && err == nil {
			t.Fatalf("step %d: stale writer succeeded", step)
		}
	}
}

// rawJSON is a value Put encodes as the JSON it holds.
type rawJSON string

func (j rawJSON) MarshalJSON() ([]byte, error) { return []byte(j), nil }
