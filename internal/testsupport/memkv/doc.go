// Package memkv is the in-memory Queen KV that unit tests of the packages
// keeping state in the KV (coordinator, consumergroup, sharepartition) run
// against: the contract's semantics (queen-api.md §7.2) in one place, with
// hooks to fail, slow, park or race a call.
//
// It owns that fake only and must not reach for anything past package queen's
// types; it is test-only (a real queen-dev in process is
// testsupport/devbroker). It is its own package because package queen's
// own tests import testsupport.
package memkv
