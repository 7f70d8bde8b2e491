package testsupport

import (
	"sync"

	"github.com/queen-mq/queen-kafka/ownership"
)

// Owners is an ownership.Owners a test points at a node: every key is
// owned by the node Set last named, as this node (self) sees it.
type Owners struct {
	mu          sync.Mutex
	self, owner int32
}

// NewOwners is node self's view, every key owned by owner.
func NewOwners(self, owner int32) *Owners { return &Owners{self: self, owner: owner} }

// Set moves every key to owner.
func (o *Owners) Set(owner int32) {
	o.mu.Lock()
	o.owner = owner
	o.mu.Unlock()
}

func (o *Owners) Owner(string) (ownership.Broker, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return ownership.Broker{NodeID: o.owner}, nil
}

func (o *Owners) Redirect(string) (ownership.Broker, bool) { return ownership.Broker{}, false }

func (o *Owners) Self() ownership.Broker { return ownership.Broker{NodeID: o.self} }
