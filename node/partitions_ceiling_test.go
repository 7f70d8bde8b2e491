package node

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queen-mq/queen-kafka/catalogue"
	"github.com/queen-mq/queen-kafka/config"
)

// The catalogue's ceiling on a topic's width is QUEEN_KAFKA_DEFAULT_PARTITIONS'
// upper bound, declared in config/.
func TestPartitionCeilingIsTheVariablesRange(t *testing.T) {
	for _, v := range config.Variables(config.FacadeMode) {
		if v.Name == "QUEEN_KAFKA_DEFAULT_PARTITIONS" {
			require.Equal(t, int64(catalogue.MaxWidth), v.Max, "the partition ceiling is the variable's range")
			return
		}
	}
	t.Fatal("QUEEN_KAFKA_DEFAULT_PARTITIONS is not declared")
}
