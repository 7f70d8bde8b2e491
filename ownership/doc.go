// Package ownership is the vocabulary of who coordinates a key (a group id,
// a transactional id): Broker, a node as FindCoordinator names it; Owners,
// the question "which node owns this key, where should a client look while
// that is unknown, who am I"; ErrNoOwner, the answer while owners cannot be
// named; and Single, single mode's answer (this node owns every key).
//
// The coordinator asks an Owners and the cluster registry answers one
// (registry.Ownership); both import this package as siblings, so neither
// imports the other for the types it passes along.
//
// It owns the words, not the answer: no ring, no registry session, no group
// state. It is a leaf: it imports the standard library only, never a package
// of the project.
package ownership
