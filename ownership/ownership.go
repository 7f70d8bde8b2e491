package ownership

import "errors"

// Broker is a node as FindCoordinator names it.
type Broker struct {
	NodeID int32
	Host   string
	Port   int32
}

// Owners answers which node coordinates a key: a group id today, and a
// transactional id on the same ring once transactions span the fleet
// (issue 9). Owner's error means the answer is unknown (the cluster
// registry is unreachable, or this node has not joined yet): every RPC for
// the key is then COORDINATOR_NOT_AVAILABLE, which clients retry. In a
// cluster it is registry.Ownership; the coordinator never reads the
// registry itself.
type Owners interface {
	Owner(key string) (Broker, error)
	// Redirect is where a client should look for key's coordinator while
	// Owner cannot answer, false when nothing better than "not available"
	// is known. FindCoordinator is only a pointer (the node it names
	// checks its own authority at every group RPC), so a node that cannot
	// vouch for itself names a peer rather than leaving a client that
	// keeps asking it (librdkafka does) without a coordinator until the
	// registry heals.
	Redirect(key string) (Broker, bool)
	// Self is this node.
	Self() Broker
}

// Single is single mode: this node coordinates every key.
type Single struct{ Node Broker }

// Owner is always the node itself.
func (s Single) Owner(string) (Broker, error) { return s.Node, nil }

// Redirect is never needed: Owner always answers.
func (s Single) Redirect(string) (Broker, bool) { return Broker{}, false }

// Self is the node.
func (s Single) Self() Broker { return s.Node }

// ErrNoOwner is what an Owners may return while it cannot name owners.
var ErrNoOwner = errors.New("ownership unknown: the node registry is unavailable")

// Mine reports whether o places key on this node; err is Owner's, when it
// cannot say (every group RPC then answers COORDINATOR_NOT_AVAILABLE).
func Mine(o Owners, key string) (bool, error) {
	owner, err := o.Owner(key)
	if err != nil {
		return false, err
	}
	return owner.NodeID == o.Self().NodeID, nil
}
