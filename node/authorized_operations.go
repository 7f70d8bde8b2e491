package node

import "math"

// The authorized operations a describe answers when its client asks for
// them (Metadata v8+, DescribeGroups v3+, DescribeCluster,
// ConsumerGroupDescribe, ShareGroupDescribe). Queen has no ACL model, and
// a Kafka broker with no authorizer answers every operation the resource
// type supports (AuthHelper.authorizedOperations with authorizer None:
// AclEntry.supportedOperations, as a bit field of AclOperation codes).
// Unasked, the field keeps Kafka's "omitted" sentinel.

// notAsked is the sentinel of an authorized-operations field nobody asked
// for (Kafka's Integer.MIN_VALUE).
const notAsked = math.MinInt32

// AclOperation codes (org.apache.kafka.common.acl.AclOperation).
const (
	aclRead            = 3
	aclWrite           = 4
	aclCreate          = 5
	aclDelete          = 6
	aclAlter           = 7
	aclDescribe        = 8
	aclClusterAction   = 9
	aclDescribeConfigs = 10
	aclAlterConfigs    = 11
	aclIdempotentWrite = 12
)

func opBits(ops ...int) int32 {
	var b int32
	for _, op := range ops {
		b |= 1 << op
	}
	return b
}

// AclEntry.supportedOperations of Kafka 4.x: a group's configs (KIP-848)
// are describable and alterable, which the facade serves.
var (
	topicOperations   = opBits(aclRead, aclWrite, aclCreate, aclDescribe, aclDelete, aclAlter, aclDescribeConfigs, aclAlterConfigs)
	groupOperations   = opBits(aclRead, aclDescribe, aclDelete, aclDescribeConfigs, aclAlterConfigs)
	clusterOperations = opBits(aclCreate, aclClusterAction, aclDescribeConfigs, aclAlterConfigs, aclIdempotentWrite, aclAlter, aclDescribe)
)

// authorizedOps is a resource's answer: every supported operation when
// asked, the sentinel when not.
func authorizedOps(asked bool, supported int32) int32 {
	if asked {
		return supported
	}
	return notAsked
}
