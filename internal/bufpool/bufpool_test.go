package bufpool

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestClasses(t *testing.T) {
	prev := 0
	for n := 1; n <= 1<<maxShift; n += 1 + n/7 {
		idx, size, ok := class(n)
		require.True(t, ok, n)
		require.GreaterOrEqual(t, size, n)
		if n > 1<<minShift {
			require.LessOrEqual(t, size-n, n/3, "a class wastes at most a third of its request: %d in %d", n, size)
		}
		require.GreaterOrEqual(t, idx, prev)
		prev = idx
		// A class's size is its own class.
		idx2, size2, _ := class(size)
		require.Equal(t, idx, idx2, n)
		require.Equal(t, size, size2, n)
	}
	_, _, ok := class(1<<maxShift + 1)
	require.False(t, ok)
}

func TestGetPut(t *testing.T) {
	b := Get(100 << 10)
	require.Zero(t, len(b))
	require.GreaterOrEqual(t, cap(b), 100<<10)
	_, size, _ := class(100 << 10)
	require.Equal(t, size, cap(b))
	Put(append(b, 1, 2, 3))
	c := Get(99 << 10)
	require.Zero(t, len(c))
	require.Equal(t, size, cap(c))

	// Pooled never allocates: a class with a free buffer gives it, an
	// empty one gives nil.
	for range 20 {
		Put(make([]byte, 0, 3<<20))
	}
	require.NotNil(t, Pooled(3<<20-5))
	require.Nil(t, Pooled(200<<20+7), "nothing of that class was put")
	require.Nil(t, Pooled(100), "below the classes")

	// Sizes no class holds are made to measure and not kept.
	big := Get(1<<maxShift + 1)
	require.Equal(t, 1<<maxShift+1, cap(big))
	Put(big)
	Put(make([]byte, 0, 12345)) // not a class size: dropped
	Put(nil)
}
