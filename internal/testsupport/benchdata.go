package testsupport

import (
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"strings"
)

// ProduceValues are the produce benchmarks' record values (e2e's
// BenchmarkProduceTargets and what cmd/queen-dev's push harness sends in
// its place): n values of size bytes, the first half random alphanumerics
// from seed, the second half a repeated phrase, so that they compress as
// ordinary text does, neither all nor nothing.
func ProduceValues(n, size int, seed uint64) [][]byte {
	const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	phrase := strings.Repeat("the quick brown fox jumps over the lazy dog ", size/88+1)[:size-size/2]
	rng := rand.New(rand.NewPCG(seed, seed))
	vs := make([][]byte, n)
	for i := range vs {
		v := make([]byte, 0, size)
		for range size / 2 {
			v = append(v, alnum[rng.IntN(len(alnum))])
		}
		vs[i] = append(v, phrase...)
	}
	return vs
}

// DirBytes is the size of the files under dir (a store on disk).
func DirBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			if info, err := e.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}
