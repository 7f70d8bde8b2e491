package transport

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The bounds of Produce's group as package node declares them.
const (
	maxCoalesce        = 5
	coalesceFrameBytes = 512 << 10
)

// TestNextGroupKeepsOrder: consecutive waiting Produce requests group up to
// maxCoalesce; any other request, and a Produce past the frame bound,
// waits for its own turn, and the order never changes.
func TestNextGroupKeepsOrder(t *testing.T) {
	batch := &Batch{MaxRequests: maxCoalesce, MaxBytes: coalesceFrameBytes}
	produce := func(id int32, size int64) queued {
		return queued{size: size, hdr: requestHeader{key: kmsg.Produce.Int16(), correlationID: id}, row: Row{Key: kmsg.Produce.Int16(), Handler: batch}, req: kmsg.NewPtrProduceRequest()}
	}
	meta := func(id int32) queued {
		return queued{hdr: requestHeader{key: kmsg.Metadata.Int16(), correlationID: id}, row: Row{Key: kmsg.Metadata.Int16(), Handler: Single(nil)}, req: kmsg.NewPtrMetadataRequest()}
	}
	in := []queued{produce(1, 10), produce(2, 10), meta(3)}
	for id := int32(4); id <= 10; id++ {
		in = append(in, produce(id, 10))
	}
	in = append(in, produce(11, coalesceFrameBytes), produce(12, 10))
	queue := make(chan queued, len(in))
	for _, q := range in {
		queue <- q
	}
	close(queue)
	var got [][]int32
	var carry []queued
	for {
		group, rest, ok := nextGroup(queue, carry)
		if !ok {
			break
		}
		var ids []int32
		for _, q := range group {
			ids = append(ids, q.hdr.correlationID)
		}
		got = append(got, ids)
		carry = rest
	}
	require.Equal(t, [][]int32{{1, 2}, {3}, {4, 5, 6, 7, 8}, {9, 10}, {11}, {12}}, got)
}
