package fetchsession

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSlotsReuseWithANewGeneration(t *testing.T) {
	var s Slots
	a, ga := s.Take()
	b, gb := s.Take()
	require.Equal(t, []int32{0, 1}, []int32{a, b})
	require.Equal(t, []uint32{1, 1}, []uint32{ga, gb})
	require.Equal(t, 2, s.Len())

	s.Release(a)
	c, gc := s.Take()
	require.Equal(t, a, c, "a released slot is given again")
	require.Equal(t, uint32(2), gc, "with a new generation")
	require.Equal(t, gc, s.Gen(c))
	require.Equal(t, gb, s.Gen(b))

	d, gd := s.Take()
	require.Equal(t, int32(2), d, "no slot free: a new one")
	require.Equal(t, uint32(1), gd)
	require.Equal(t, 3, s.Len())
}
