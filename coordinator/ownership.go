package coordinator

import "errors"

// Broker is a node as FindCoordinator names it.
type Broker struct {
	NodeID int32
	Host   string
	Port   int32
}

// Ownership answers which node coordinates a group. Owner's error means the
// answer is unknown (cluster registry unreachable): every group RPC is then
// COORDINATOR_NOT_AVAILABLE, which clients retry.
type Ownership interface {
	Owner(group string) (Broker, error)
	// Self is this node.
	Self() Broker
}

// Single is single mode: this node coordinates every group.
type Single struct{ Node Broker }

// Owner is always the node itself.
func (s Single) Owner(string) (Broker, error) { return s.Node, nil }

// Self is the node.
func (s Single) Self() Broker { return s.Node }

// ErrNoOwner is what an Ownership may return while it cannot name owners.
var ErrNoOwner = errors.New("group ownership unknown: the node registry is unavailable")
