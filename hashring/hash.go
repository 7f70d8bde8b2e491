package hashring

import "hash/fnv"

// Hash is the 64-bit string hash both node ids and keys go through. It is
// FNV-1a 64 (the module graph carries no xxhash) followed by the SplitMix64
// finaliser: FNV-1a alone barely diffuses short inputs such as "1", "2" and
// "3", which would make rendezvous weights of neighbouring node ids
// correlated and skew the spread; the finaliser gives every input bit an
// avalanche over the whole word.
func Hash(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s)) // never fails
	return mix64(h.Sum64())
}

// mix64 is SplitMix64's finaliser (Steele, Lea, Flood 2014).
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
