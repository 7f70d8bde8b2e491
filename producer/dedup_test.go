package producer

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDedupKeys(t *testing.T) {
	require.Equal(t, []string{"kafka:7:2:41", "kafka:7:2:42"}, DedupKeys(7, 2, 41, 2))
	require.Equal(t, []string{"kafka:9:0:2147483647", "kafka:9:0:0"}, DedupKeys(9, 0, math.MaxInt32, 2), "sequences wrap as Kafka's do")
	require.Nil(t, DedupKeys(1, 0, 0, 0))
	require.NotEqual(t, DedupKeys(7, 2, 41, 1), DedupKeys(7, 3, 41, 1), "a new epoch is a new key")
}
