package coordinator

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Topics is what this node serves a client, as its Metadata names it: the
// topics of the client's catalogue, each with the partitions below its
// width. The coordinator does not read the catalogue itself; the node
// answers for it.
type Topics interface {
	// Width is topic's partition count and whether the topic is served at
	// all. An error means the catalogue could not be read.
	Width(ctx context.Context, topic string) (width int32, served bool, err error)
}

// refuseUnserved answers UNKNOWN_TOPIC_OR_PARTITION, in codes, every
// partition of req that topics does not serve, and returns how many it
// refused; OffsetCommit writes none of them. That is Apache Kafka's answer to
// a commit for a partition its metadata does not hold, and without it a
// consumer committing on revoke just after its topic was deleted writes the
// old position back after DeleteTopics removed it, so that a topic
// recreated under the name resumes at that stale offset and skips its first
// records. A catalogue that cannot be read refuses nothing: the commit then
// meets Queen's failure in its own write and is answered for it there.
func refuseUnserved(ctx context.Context, topics Topics, req *kmsg.OffsetCommitRequest, codes [][]int16) int {
	if topics == nil {
		return 0
	}
	var refused [][2]int // [topic, partition] indexes
	for i, t := range req.Topics {
		width, served, err := topics.Width(ctx, t.Topic)
		if err != nil {
			return 0
		}
		for j, p := range t.Partitions {
			if !served || p.Partition < 0 || p.Partition >= width {
				refused = append(refused, [2]int{i, j})
			}
		}
	}
	for _, r := range refused {
		codes[r[0]][r[1]] = kerr.UnknownTopicOrPartition.Code
	}
	return len(refused)
}
