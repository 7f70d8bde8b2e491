package shareadmin

import (
	"context"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/fetchread"
	"github.com/queen-mq/queen-kafka/queen"
)

// QueenLog is Log over Queen's fetch route, read with the caller's client:
// the high watermark ListOffsets answers for LATEST.
type QueenLog struct{ Q *queen.Client }

// EndOffsets is the high watermark of each of topic's partitions; a
// partition Queen does not know is left out.
func (l QueenLog) EndOffsets(ctx context.Context, topic string, partitions []int32) (map[int32]int64, error) {
	searches := make([]*fetchread.Search, len(partitions))
	for i, p := range partitions {
		resp := kmsg.NewListOffsetsResponseTopicPartition()
		searches[i] = &fetchread.Search{Topic: topic, Part: strconv.Itoa(int(p)), Resp: &resp, Target: fetchread.Latest}
	}
	if _, err := fetchread.Offsets(ctx, l.Q, searches); err != nil {
		return nil, err
	}
	out := make(map[int32]int64, len(partitions))
	for i, s := range searches {
		if s.Resp.ErrorCode == 0 {
			out[partitions[i]] = s.Resp.Offset
		}
	}
	return out, nil
}
