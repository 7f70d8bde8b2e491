package node

import "github.com/twmb/franz-go/pkg/kmsg"

// coalescable reports whether q may share a push with the Produce requests
// around it.
func coalescable(q queued) bool {
	return q.preset == nil && q.hdr.key == kmsg.Produce.Int16()
}

// nextGroup takes the next request to answer, from carry (requests already
// taken off the queue, in order) and then the queue, and returns it with
// what is left of carry. A Produce comes with the Produce requests right
// behind it that are already read and waiting, up to maxCoalesce and
// coalesceFrameBytes of frames; nothing is waited for, and a request of
// another kind, or past the bounds, stays behind for its own turn. ok is
// false once the queue is closed and drained.
func nextGroup(queue <-chan queued, carry []queued) (group, rest []queued, ok bool) {
	if len(carry) == 0 {
		q, ok := <-queue
		if !ok {
			return nil, nil, false
		}
		carry = []queued{q}
	}
	if !coalescable(carry[0]) {
		return carry[:1:1], carry[1:], true
	}
	group = make([]queued, 0, maxCoalesce)
	size := int64(0)
	joins := func(q queued) bool {
		return coalescable(q) && (len(group) == 0 || len(group) < maxCoalesce && size+q.size <= coalesceFrameBytes)
	}
	for len(carry) > 0 && joins(carry[0]) {
		size += carry[0].size
		group, carry = append(group, carry[0]), carry[1:]
	}
	if len(carry) > 0 {
		return group, carry, true
	}
	for len(group) < maxCoalesce && size < coalesceFrameBytes {
		select {
		case q, ok := <-queue:
			if !ok {
				return group, nil, true // the next call sees the queue closed
			}
			if !joins(q) {
				return group, []queued{q}, true
			}
			size += q.size
			group = append(group, q)
		default:
			return group, nil, true
		}
	}
	return group, nil, true
}
