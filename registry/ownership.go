package registry

import (
	"fmt"
	"sync/atomic"

	"github.com/queen-mq/queen-kafka/ownership"
)

// Ownership is ownership.Owners in cluster mode. A key (a group id;
// transactional ids go on the same ring, issue 9) is owned by the live node
// the rendezvous hash names in the session's view. Before a session is
// bound (a node between its construction and its join) and while the
// session cannot answer with authority (Session.Err), no owner is known:
// the answer is ownership.ErrNoOwner, which the coordinator turns into
// COORDINATOR_NOT_AVAILABLE. Nothing else of the coordinator is known here.
type Ownership struct {
	self Node
	sess atomic.Pointer[Session]
}

// NewOwnership is the ownership of the node self, unbound.
func NewOwnership(self Node) *Ownership { return &Ownership{self: self} }

// Bind makes s the session owners are read from (the node's join).
func (o *Ownership) Bind(s *Session) { o.sess.Store(s) }

// Session is the bound session, nil before Bind.
func (o *Ownership) Session() *Session { return o.sess.Load() }

// Owner is the live node owning key, or an error wrapping
// ownership.ErrNoOwner (and the session's reason, once bound).
func (o *Ownership) Owner(key string) (ownership.Broker, error) {
	s := o.Session()
	if s == nil {
		return ownership.Broker{}, ownership.ErrNoOwner
	}
	n, err := s.Owner(key)
	if err != nil {
		return ownership.Broker{}, fmt.Errorf("%w: %w", ownership.ErrNoOwner, err)
	}
	return broker(n), nil
}

// Redirect is the owner of key among the other nodes of the session's last
// view, while Owner cannot answer. This node cannot vouch for its own
// membership then, and its peers drop it once its row expires (the same
// rule Metadata follows for partition leaders): a client pointed at the
// survivor's owner finds the key there, or is told NOT_COORDINATOR until
// that peer's view catches up. False before the join or when the view
// holds no other node.
func (o *Ownership) Redirect(key string) (ownership.Broker, bool) {
	s := o.Session()
	if s == nil {
		return ownership.Broker{}, false
	}
	v := s.View()
	if v.Ring == nil {
		return ownership.Broker{}, false
	}
	id, ok := v.Ring.Without(o.self.ID).Owner(key)
	if !ok {
		return ownership.Broker{}, false
	}
	n, ok := v.Node(id)
	return broker(n), ok
}

// Self is this node as FindCoordinator names it.
func (o *Ownership) Self() ownership.Broker { return broker(o.self) }

func broker(n Node) ownership.Broker {
	return ownership.Broker{NodeID: n.ID, Host: n.Host, Port: int32(n.Port)}
}
