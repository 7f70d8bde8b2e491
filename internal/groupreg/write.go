package groupreg

import (
	"context"
	"errors"
	"fmt"

	"github.com/queen-mq/queen-kafka/queen"
)

// maxOpsPerCall is the contract's ceiling of operations in one KV call.
const maxOpsPerCall = 256

// ErrLost is a write whose lead lost its compare-and-set: another node
// wrote the group's meta row or took its fence.
var ErrLost = errors.New("group taken over by another node")

// Write is a group owner's write of its rows: ops in calls within the
// contract's limits, each led by meta (the put of the group's meta row)
// expecting *ver, the version the owner last wrote or read (below 0: the
// row must be absent), which is then set to the version written. fence,
// when set, leads the first call: the qk:fence:<group> row a group's new
// owner takes (expecting the version it has now), so that the previous
// owner's next fenced write fails. A lost lead is ErrLost.
func Write(ctx context.Context, kv queen.KVCaller, group string, meta queen.KVOp, ver *int64, fence *queen.FenceValue, ops []queen.KVOp) error {
	*ver = max(*ver, 0)
	per := maxOpsPerCall - 2
	done := 0
	for first := true; first || done < len(ops); first = false {
		chunk := ops[done:min(done+per, len(ops))]
		var lead []queen.KVOp
		if first && fence != nil {
			op, err := queen.FenceOp(ctx, kv, group, *fence)
			if err != nil {
				return err
			}
			lead = append(lead, op)
		}
		expect := *ver
		meta.Expect, meta.Required = &expect, true
		metaAt := len(lead)
		lead = append(lead, meta)
		res, err := kv.KV(ctx, append(lead, chunk...))
		if err != nil {
			var pe *queen.PreconditionError
			if errors.As(err, &pe) && pe.Index <= metaAt {
				return fmt.Errorf("%w (op %d, %s, version %d)", ErrLost, pe.Index, pe.KVReason, pe.Version)
			}
			return fmt.Errorf("kv write of group %q: %w", group, err)
		}
		*ver = res[metaAt].Version
		done += len(chunk)
	}
	return nil
}
