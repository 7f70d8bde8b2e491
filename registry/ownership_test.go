package registry

import (
	"errors"
	"fmt"
	"testing"

	"github.com/queen-mq/queen-kafka/coordinator"
	"github.com/queen-mq/queen-kafka/hashring"
)

// Ownership is coordinator.Ownership: unknown before a session is bound
// and while the session is not trusted, otherwise the ring's owner of any
// key (group ids and transactional ids alike) at its advertised address.
func TestOwnershipAnswersTheCoordinator(t *testing.T) {
	h, f, a := startFaulty(t)
	h.start(h.store, h.cfg(2, "b"))
	self := Node{ID: 1, Host: "node1.test", Port: 9092}
	own := NewOwnership(self)
	var _ coordinator.Ownership = own
	if got := own.Self(); got != (coordinator.Broker{NodeID: 1, Host: "node1.test", Port: 9092}) {
		t.Fatalf("Self = %+v", got)
	}
	if _, err := own.Owner("g"); !errors.Is(err, coordinator.ErrNoOwner) {
		t.Fatalf("Owner before Bind = %v, want ErrNoOwner", err)
	}
	own.Bind(a)
	if own.Session() != a {
		t.Fatal("Session is not the bound one")
	}
	h.tick(2)
	ring := hashring.New([]int32{1, 2})
	for i := range 200 {
		for _, key := range []string{fmt.Sprintf("group-%d", i), fmt.Sprintf("txn-%d", i)} {
			want, _ := ring.Owner(key)
			got, err := own.Owner(key)
			if err != nil || got != (coordinator.Broker{NodeID: want, Host: fmt.Sprintf("node%d.test", want), Port: 9092}) {
				t.Fatalf("Owner(%s) = %+v, %v; want node %d", key, got, err, want)
			}
		}
	}

	f.mode.Store(faultFail)
	h.tick(2)
	if _, err := own.Owner("g"); !errors.Is(err, coordinator.ErrNoOwner) || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Owner with the registry down = %v, want ErrNoOwner wrapping ErrUnavailable", err)
	}
}
