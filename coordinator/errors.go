package coordinator

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/queen-mq/queen-kafka/faults"
)

// kvCode maps a failed KV call to the Kafka code a group or offset API
// answers: a lost fence is NOT_COORDINATOR, the rest is faults.GroupCode.
func kvCode(err error) int16 {
	if errors.Is(err, errLostFence) {
		return kerr.NotCoordinator.Code
	}
	return faults.GroupCode(err)
}

// errLostFence is a fence another node holds: this node no longer
// coordinates the group.
var errLostFence = errors.New("fence held by another node")

// writeCode is the code a failed write of g answers. A lost fence also
// drops g: its state is another node's now, and a member that re-finds
// the coordinator must not be answered from this stale copy.
func (c *Coordinator) writeCode(g *group, err error) int16 {
	if errors.Is(err, errLostFence) {
		c.dropGroup(g)
	}
	return kvCode(err)
}

// QueenCode is the Kafka code the group and offset APIs answer for a Queen
// failure (queen-api.md §0.2 as kvCode maps it), for the node's by-id
// translations that read the catalogue before a group request.
func QueenCode(err error) int16 { return kvCode(err) }
