// Package staticgroup is the static-membership scenario (KIP-345) that the
// node's in-process tests (pinned to each version step) and the e2e suite
// (single and cluster mode) both run against a facade: three franz-go
// static members, a rolling restart of all three that must rebalance
// nothing, a commit read back, a duplicate instance id that fences the
// running member, and DescribeGroups naming every instance id.
//
// For _test.go files only; it imports franz-go and testify, which
// testsupport itself does not.
//
// It owns the scenario's steps and assertions, not the facade it runs
// against: the caller hands it a bootstrap address (and, for node's tests,
// the pinned versions), and it imports no package of this module.
package staticgroup
