package authz

import (
	"math"
	"testing"
)

// TestSupportedOperations spells out, code by code, Kafka 4.x's
// AclEntry.supportedOperations for each resource type.
func TestSupportedOperations(t *testing.T) {
	for _, c := range []struct {
		name string
		got  int32
		want int32
	}{
		// READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8,
		// DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11.
		{"topic", Topic, 1<<3 | 1<<4 | 1<<5 | 1<<6 | 1<<7 | 1<<8 | 1<<10 | 1<<11},
		// READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS.
		{"group", Group, 1<<3 | 1<<6 | 1<<8 | 1<<10 | 1<<11},
		// CREATE, ALTER, DESCRIBE, CLUSTER_ACTION 9, DESCRIBE_CONFIGS,
		// ALTER_CONFIGS, IDEMPOTENT_WRITE 12.
		{"cluster", Cluster, 1<<5 | 1<<7 | 1<<8 | 1<<9 | 1<<10 | 1<<11 | 1<<12},
	} {
		if c.got != c.want {
			t.Errorf("%s: %b, want %b", c.name, c.got, c.want)
		}
		if Ops(true, c.got) != c.want || Ops(false, c.got) != math.MinInt32 {
			t.Errorf("%s: Ops answers %d asked, %d unasked", c.name, Ops(true, c.got), Ops(false, c.got))
		}
	}
}
