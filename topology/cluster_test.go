package topology

import (
	"slices"
	"testing"

	"github.com/queen-mq/queen-kafka/hashring"
	"github.com/queen-mq/queen-kafka/registry"
)

// TestClusterSnapshotListsSelf: a view that lacks this node (or is empty)
// still lists it, so no client is handed an empty broker list, while
// leaders stay on the view's ring to agree with the other nodes.
func TestClusterSnapshotListsSelf(t *testing.T) {
	self := registry.Node{ID: 2, Host: "self.test", Port: 9092}
	others := []registry.Node{{ID: 1, Host: "a.test", Port: 1}, {ID: 3, Host: "c.test", Port: 3}}
	s := buildSnapshot(self, registry.View{Self: 2, Nodes: others, Ring: hashring.New([]int32{1, 3})}, false)
	var ids []int32
	for _, b := range s.brokers {
		ids = append(ids, b.NodeID)
	}
	if !slices.Equal(ids, []int32{1, 2, 3}) || s.brokers[1].Host != "self.test" {
		t.Fatalf("brokers %+v", s.brokers)
	}
	if s.controller != 1 || s.ring.Contains(2) {
		t.Fatalf("controller %d ring %v: leaders must follow the view", s.controller, s.ring.Nodes())
	}
	empty := buildSnapshot(self, registry.View{Self: 2}, true)
	if len(empty.brokers) != 1 || empty.brokers[0].NodeID != 2 || empty.controller != 2 {
		t.Fatalf("empty view: %+v controller %d", empty.brokers, empty.controller)
	}
	if l, _ := empty.ring.Leader("t", 0); l != 2 {
		t.Fatalf("empty view leader %d", l)
	}
}
