package codegrid

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFillKeepsRefusals(t *testing.T) {
	g := New([]int{2, 0, 3}, func(n int) int { return n })
	require.Equal(t, 5, g.Len())
	g[2][1] = 3
	g.Fill(7)
	require.Equal(t, Grid{{7, 7}, {}, {7, 3, 7}}, g)
}
