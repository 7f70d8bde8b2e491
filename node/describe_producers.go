package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/transport"
)

// handleDescribeProducers lists the producers of the connection's
// identity this node holds a sequence window for on each partition: id,
// epoch, last sequence and when the node accepted its last batch. The
// windows live at the node that sequenced the batches, the partition's
// leader, so in cluster mode a partition another node leads is
// NOT_LEADER_OR_FOLLOWER, as Kafka answers it (kadm sends each partition to
// its leader). No coordinator epoch is kept (-1), and no open transaction
// has a start offset (-1): its records take offsets at the commit. Versions:
// see its row in the version table.
func (n *Node) handleDescribeProducers(ctx context.Context, c *transport.Conn, req *kmsg.DescribeProducersRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	served := n.txnPartitions(c, false)
	self := n.topo.SelfID()
	for _, t := range req.Topics {
		rt := kmsg.NewDescribeProducersResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewDescribeProducersResponseTopicPartition()
			rp.Partition = p
			if code := served(ctx, t.Topic, p); code != 0 {
				rp.ErrorCode = code
			} else if leader, _ := n.topo.LeaderFor(t.Topic, p); leader != self {
				rp.ErrorCode = kerr.NotLeaderForPartition.Code
			} else {
				for _, pp := range n.sequencer.Producers(c.Identity(), t.Topic, p) {
					ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
					ap.ProducerID, ap.ProducerEpoch = pp.ID, int32(pp.Epoch)
					ap.LastSequence, ap.LastTimestamp = pp.LastSequence, pp.LastTimestamp
					ap.CoordinatorEpoch = -1
					rp.ActiveProducers = append(rp.ActiveProducers, ap)
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
