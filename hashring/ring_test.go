package hashring

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func keys(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("group-%d", i)
	}
	return out
}

func TestOwnerIndependentOfOrderAndDuplicates(t *testing.T) {
	a := New([]int32{1, 2, 3, 7})
	b := New([]int32{7, 3, 3, 1, 2, 7})
	for _, k := range keys(5000) {
		x, okx := a.Owner(k)
		y, oky := b.Owner(k)
		if !okx || !oky || x != y {
			t.Fatalf("key %q: %d/%v vs %d/%v", k, x, okx, y, oky)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		ids := []int32{5, 9, 12, 40, 64}
		rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		r := New(ids)
		for _, k := range keys(200) {
			want, _ := Owner([]int32{5, 9, 12, 40, 64}, k)
			if got, _ := r.Owner(k); got != want {
				t.Fatalf("order %v key %q: %d, want %d", ids, k, got, want)
			}
		}
	}
}

func TestOwnerEmpty(t *testing.T) {
	r := New(nil)
	if id, ok := r.Owner("g"); ok || id != 0 {
		t.Fatalf("empty ring owner = %d, %v", id, ok)
	}
	if _, ok := r.Controller(); ok {
		t.Fatal("empty ring has a controller")
	}
	if r.Replicas("t", 0) != nil {
		t.Fatal("empty ring has replicas")
	}
}

// A node leaving moves exactly the keys it owned; everything else stays.
func TestLeaveMovesOnlyTheLeaversKeys(t *testing.T) {
	before := New([]int32{1, 2, 3, 4})
	after := New([]int32{1, 2, 4})
	moved := 0
	for _, k := range keys(20000) {
		b, _ := before.Owner(k)
		a, _ := after.Owner(k)
		if b == 3 {
			moved++
			if a == 3 {
				t.Fatalf("key %q still owned by departed node", k)
			}
			continue
		}
		if a != b {
			t.Fatalf("key %q moved %d -> %d though its owner stayed", k, b, a)
		}
	}
	if moved == 0 {
		t.Fatal("node 3 owned no key out of 20000")
	}
}

// A node joining takes keys only for itself; no key moves between the others.
func TestJoinMovesKeysOnlyToTheNewcomer(t *testing.T) {
	before := New([]int32{1, 2, 3})
	after := New([]int32{1, 2, 3, 9})
	taken := 0
	for _, k := range keys(20000) {
		b, _ := before.Owner(k)
		a, _ := after.Owner(k)
		if a != b {
			if a != 9 {
				t.Fatalf("key %q moved %d -> %d, not to the newcomer", k, b, a)
			}
			taken++
		}
	}
	if taken == 0 {
		t.Fatal("newcomer took no key out of 20000")
	}
}

// Neighbouring ids must not skew the spread: each of 3 nodes gets a fair
// share of 30000 keys (expected 10000, σ≈82; the bounds are ±10%).
func TestSpreadIsEven(t *testing.T) {
	for _, ids := range [][]int32{{1, 2, 3}, {62, 63, 64}} {
		r := New(ids)
		count := map[int32]int{}
		for _, k := range keys(30000) {
			o, _ := r.Owner(k)
			count[o]++
		}
		for _, id := range ids {
			if c := count[id]; c < 9000 || c > 11000 {
				t.Errorf("ids %v: node %d owns %d of 30000 keys", ids, id, c)
			}
		}
	}
	r := New([]int32{1, 2, 3})
	lead := map[int32]int{}
	for p := range int32(3000) {
		l, _ := r.Leader("orders", p)
		lead[l]++
	}
	for id := int32(1); id <= 3; id++ {
		if c := lead[id]; c < 900 || c > 1100 {
			t.Errorf("node %d leads %d of 3000 partitions", id, c)
		}
	}
}

func TestReplicasLeaderFirstThenAscending(t *testing.T) {
	r := New([]int32{4, 1, 3})
	for p := range int32(64) {
		leader, _ := r.Leader("t", p)
		reps := r.Replicas("t", p)
		if len(reps) != 3 || reps[0] != leader {
			t.Fatalf("partition %d: replicas %v, leader %d", p, reps, leader)
		}
		rest := reps[1:]
		if rest[0] >= rest[1] {
			t.Fatalf("partition %d: followers not ascending: %v", p, reps)
		}
		for _, id := range rest {
			if id == leader {
				t.Fatalf("partition %d: leader listed twice: %v", p, reps)
			}
		}
	}
}

func TestControllerIsLowestLiveID(t *testing.T) {
	if c, ok := New([]int32{9, 3, 5}).Controller(); !ok || c != 3 {
		t.Fatalf("controller = %d, %v", c, ok)
	}
}

func TestLeaderIsOwnerOfPartitionKey(t *testing.T) {
	r := New([]int32{1, 2, 3})
	l, _ := r.Leader("a.b", 17)
	o, _ := r.Owner("a.b/17")
	if l != o || PartitionKey("a.b", 17) != "a.b/17" {
		t.Fatalf("leader %d owner %d key %q", l, o, PartitionKey("a.b", 17))
	}
}

func TestContainsAndNodes(t *testing.T) {
	r := New([]int32{3, 1, 3})
	if !r.Contains(3) || r.Contains(2) || r.Len() != 2 {
		t.Fatalf("contains/len wrong: %v", r.Nodes())
	}
	n := r.Nodes()
	n[0] = 99
	if r.Nodes()[0] != 1 {
		t.Fatal("Nodes exposes internal slice")
	}
}

// Pinned answers: the hash is part of the cluster contract, so a change to
// it must fail a test rather than silently split groups in a rolling deploy.
func TestHashIsStable(t *testing.T) {
	r := New([]int32{1, 2, 3})
	got := ""
	for _, k := range []string{"billing", "orders", "g0", "g1", "g2", "g3"} {
		o, _ := r.Owner(k)
		got += fmt.Sprintf("%s=%d ", k, o)
	}
	const want = "billing=3 orders=1 g0=2 g1=1 g2=2 g3=1 "
	if got != want {
		t.Fatalf("owners changed:\n got %q\nwant %q", got, want)
	}
	// FNV-1a 64 of "1" (offset basis 0xcbf29ce484222325, prime 0x100000001b3).
	if h := Hash("1"); h != 0xaf63ac4c86019afc {
		t.Fatalf("Hash(\"1\") = %#x", h)
	}
}

func BenchmarkOwner(b *testing.B) {
	r := New([]int32{1, 2, 3})
	for b.Loop() {
		r.Owner("group-benchmark")
	}
}

// TestWithoutIsTheRingOfTheOthers: a ring without a node owns every key
// as a ring built from the others does; without a node it lacks, it is the
// same ring; without its only node, it owns nothing.
func TestWithoutIsTheRingOfTheOthers(t *testing.T) {
	r := New([]int32{1, 2, 3})
	w, others := r.Without(2), New([]int32{1, 3})
	for i := range 200 {
		key := fmt.Sprintf("g-%d", i)
		got, _ := w.Owner(key)
		want, _ := others.Owner(key)
		if got != want || got == 2 {
			t.Fatalf("Without(2).Owner(%s) = %d, want %d", key, got, want)
		}
	}
	if r.Without(9) != r {
		t.Fatal("Without a node the ring lacks is not the ring")
	}
	if _, ok := New([]int32{4}).Without(4).Owner("g"); ok {
		t.Fatal("a ring without its only node owns a key")
	}
}
