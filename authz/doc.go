// Package authz is what the facade answers when a Kafka client asks which
// operations it is authorized for (the authorized-operations fields of
// Metadata v8+, DescribeGroups v3+, DescribeCluster, ConsumerGroupDescribe
// and ShareGroupDescribe).
//
// Queen has no ACL model, so the facade answers as a Kafka broker with no
// authorizer does (AuthHelper.authorizedOperations with authorizer None):
// every operation the resource type supports (AclEntry.supportedOperations
// of Kafka 4.x), as a bit field of AclOperation codes. Unasked, a field
// keeps Kafka's "omitted" sentinel.
//
// It owns the operation codes and the per-resource sets. It does not decide
// whether a request is allowed: authentication and tenancy are the
// transport's and Queen's, and nothing here refuses anything.
package authz
