package hashring

import "hash/fnv"

// Hash is the 64-bit string hash node ids and keys go through: FNV-1a 64
// (the module graph carries no xxhash). go-rendezvous mixes each key/node
// pair through its own xorshift-multiply step, which is what spreads even
// neighbouring ids like "1", "2", "3" evenly (TestSpreadIsEven).
func Hash(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s)) // never fails
	return h.Sum64()
}
