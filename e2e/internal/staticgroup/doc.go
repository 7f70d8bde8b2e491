// Package staticgroup is the static-membership scenario (KIP-345) that the
// e2e suite runs against a facade, in single and cluster mode and with
// franz-go pinned to each version step: three franz-go static members, a
// rolling restart of all three that must rebalance nothing, a commit read
// back, a duplicate instance id that fences the running member, and
// DescribeGroups naming every instance id.
//
// For _test.go files only; it imports franz-go's kadm and testify, which
// only the test module requires.
//
// It owns the scenario's steps and assertions, not the facade it runs
// against: the caller hands it a bootstrap address (and, for the pinned
// steps, the versions), and it imports no package of this module.
package staticgroup
