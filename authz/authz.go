package authz

import "math"

// NotAsked is the sentinel of an authorized-operations field nobody asked
// for (Kafka's Integer.MIN_VALUE).
const NotAsked = math.MinInt32

// AclOperation codes (org.apache.kafka.common.acl.AclOperation).
const (
	opRead            = 3
	opWrite           = 4
	opCreate          = 5
	opDelete          = 6
	opAlter           = 7
	opDescribe        = 8
	opClusterAction   = 9
	opDescribeConfigs = 10
	opAlterConfigs    = 11
	opIdempotentWrite = 12
)

func bits(ops ...int) int32 {
	var b int32
	for _, op := range ops {
		b |= 1 << op
	}
	return b
}

// AclEntry.supportedOperations of Kafka 4.x: a group's configs (KIP-848)
// are describable and alterable, which the facade serves.
var (
	Topic   = bits(opRead, opWrite, opCreate, opDescribe, opDelete, opAlter, opDescribeConfigs, opAlterConfigs)
	Group   = bits(opRead, opDescribe, opDelete, opDescribeConfigs, opAlterConfigs)
	Cluster = bits(opCreate, opClusterAction, opDescribeConfigs, opAlterConfigs, opIdempotentWrite, opAlter, opDescribe)
)

// Ops is a resource's answer: every supported operation when asked, the
// sentinel when not.
func Ops(asked bool, supported int32) int32 {
	if asked {
		return supported
	}
	return NotAsked
}
