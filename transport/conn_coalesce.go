package transport

// batchOf is q's batch handler when q may be answered in a group with the
// requests of its API behind it.
func batchOf(q queued) *Batch {
	if q.preset != nil {
		return nil
	}
	b, _ := q.row.Handler.(*Batch)
	return b
}

// nextGroup takes the next request to answer, from carry (requests already
// taken off the queue, in order) and then the queue, and returns it with
// what is left of carry. A request of a batch API comes with the requests
// of its API right behind it that are already read and waiting, up to its
// Batch's MaxRequests and MaxBytes of frames; nothing is waited for, and a
// request of another API, or past the bounds, stays behind for its own
// turn. ok is false once the queue is closed and drained.
func nextGroup(queue <-chan queued, carry []queued) (group, rest []queued, ok bool) {
	if len(carry) == 0 {
		q, ok := <-queue
		if !ok {
			return nil, nil, false
		}
		carry = []queued{q}
	}
	b := batchOf(carry[0])
	if b == nil {
		return carry[:1:1], carry[1:], true
	}
	key := carry[0].hdr.key
	group = make([]queued, 0, b.MaxRequests)
	size := int64(0)
	joins := func(q queued) bool {
		return q.hdr.key == key && batchOf(q) == b && (len(group) == 0 || len(group) < b.MaxRequests && size+q.size <= b.MaxBytes)
	}
	for len(carry) > 0 && joins(carry[0]) {
		size += carry[0].size
		group, carry = append(group, carry[0]), carry[1:]
	}
	if len(carry) > 0 {
		return group, carry, true
	}
	for len(group) < b.MaxRequests && size < b.MaxBytes {
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
