package registry

import (
	"errors"
	"fmt"
	"testing"

	"github.com/queen-mq/queen-kafka/hashring"
	"github.com/queen-mq/queen-kafka/ownership"
)

// Ownership is ownership.Owners: unknown before a session is bound
// and while the session is not trusted, otherwise the ring's owner of any
// key (group ids and transactional ids alike) at its advertised address.
func TestOwnershipAnswersTheCoordinator(t *testing.T) {
	h, f, a := startFaulty(t)
	h.start(h.store, h.cfg(2, "b"))
	self := Node{ID: 1, Host: "node1.test", Port: 9092}
	own := NewOwnership(self)
	var _ ownership.Owners = own
	if got := own.Self(); got != (ownership.Broker{NodeID: 1, Host: "node1.test", Port: 9092}) {
		t.Fatalf("Self = %+v", got)
	}
	if _, err := own.Owner("g"); !errors.Is(err, ownership.ErrNoOwner) {
		t.Fatalf("Owner before Bind = %v, want ErrNoOwner", err)
	}
	if b, ok := own.Redirect("g"); ok {
		t.Fatalf("Redirect before Bind = %+v", b)
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
			if err != nil || got != (ownership.Broker{NodeID: want, Host: fmt.Sprintf("node%d.test", want), Port: 9092}) {
				t.Fatalf("Owner(%s) = %+v, %v; want node %d", key, got, err, want)
			}
		}
	}

	f.mode.Store(faultFail)
	h.tick(2)
	if _, err := own.Owner("g"); !errors.Is(err, ownership.ErrNoOwner) || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Owner with the registry down = %v, want ErrNoOwner wrapping ErrUnavailable", err)
	}
	// Set aside, the node sends clients to its peer, the owner of every key
	// once the peer drops it.
	for i := range 50 {
		key := fmt.Sprintf("group-%d", i)
		if got, ok := own.Redirect(key); !ok || got != (ownership.Broker{NodeID: 2, Host: "node2.test", Port: 9092}) {
			t.Fatalf("Redirect(%s) with the registry down = %+v, %v; want node 2", key, got, ok)
		}
	}

	// A node alone in its view has nobody to send a client to.
	h1, f1, a1 := startFaulty(t)
	h1.tick(1)
	f1.mode.Store(faultFail)
	h1.tick(1)
	alone := NewOwnership(self)
	alone.Bind(a1)
	if _, err := alone.Owner("g"); err == nil {
		t.Fatal("Owner with the registry down answered")
	}
	if got, ok := alone.Redirect("g"); ok {
		t.Fatalf("Redirect of a node alone = %+v", got)
	}
}
