package coordinator

import "errors"

// Broker is a node as FindCoordinator names it.
type Broker struct {
	NodeID int32
	Host   string
	Port   int32
}

// Ownership answers which node coordinates a key: a group id today, and a
// transactional id on the same ring once transactions span the fleet
// (issue 9). Owner's error means the answer is unknown (the cluster
// registry is unreachable, or this node has not joined yet): every RPC for
// the key is then COORDINATOR_NOT_AVAILABLE, which clients retry. In a
// cluster it is registry.Ownership; the coordinator never reads the
// registry itself.
type Ownership interface {
	Owner(key string) (Broker, error)
	// Self is this node.
	Self() Broker
}

// Single is single mode: this node coordinates every key.
type Single struct{ Node Broker }

// Owner is always the node itself.
func (s Single) Owner(string) (Broker, error) { return s.Node, nil }

// Self is the node.
func (s Single) Self() Broker { return s.Node }

// ErrNoOwner is what an Ownership may return while it cannot name owners.
var ErrNoOwner = errors.New("ownership unknown: the node registry is unavailable")
