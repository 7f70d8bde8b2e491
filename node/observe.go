package node

import (
	"encoding/binary"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/recordbatch"
	"github.com/queen-mq/queen-kafka/transport"
)

// Observer hears what the node does, for /metrics (package metrics
// implements it): what the wire does (every request answered, acks=0
// included, frames sent, connections accepted and refused), and what the
// handlers do. Its methods are called on the request path: each must be
// cheap, never block, and be safe for concurrent use.
type Observer interface {
	transport.Observer
	// Produced is what one produce group wrote: the records and batches
	// pushed to Queen or staged in a transaction.
	Produced(records, batches int)
	// Fetched is what one Fetch answer returned, records and batch bytes;
	// FetchLag one partition's records left behind the high watermark.
	Fetched(records, bytes int)
	FetchLag(records int64)
	// Committed is the partition offsets one OffsetCommit wrote.
	Committed(offsets int)
}

// nopObserver is the observer of a node nobody watches.
type nopObserver struct{ transport.NopObserver }

func (nopObserver) Produced(int, int) {}
func (nopObserver) Fetched(int, int)  {}
func (nopObserver) FetchLag(int64)    {}
func (nopObserver) Committed(int)     {}

// wireObserver is the node's observer as the wire hears it: n.obs at the
// time of each call.
type wireObserver struct{ n *Node }

func (w wireObserver) Request(key, version, code int16, bytes int, throttle, took time.Duration) {
	w.n.obs.Request(key, version, code, bytes, throttle, took)
}
func (w wireObserver) Sent(bytes int)        { w.n.obs.Sent(bytes) }
func (w wireObserver) Accepted()             { w.n.obs.Accepted() }
func (w wireObserver) Refused(reason string) { w.n.obs.Refused(reason) }

// observeAnswer reports what an answer says of the data path, after the
// wire observed the request: records fetched and their lag, offsets
// committed.
func (n *Node) observeAnswer(req kmsg.Request, resp kmsg.Response) {
	switch r := resp.(type) {
	case *kmsg.FetchResponse:
		n.observeFetch(req.(*kmsg.FetchRequest), r)
	case *kmsg.OffsetCommitResponse:
		committed := 0
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				if r.Topics[i].Partitions[j].ErrorCode == 0 {
					committed++
				}
			}
		}
		if committed > 0 {
			n.obs.Committed(committed)
		}
	}
}

// observeFetch counts the records and bytes of a Fetch answer and each
// answered partition's lag: its high watermark less the consumer's next
// offset, the one after the last record returned, or the offset asked when
// none was and the answer is laid out as the request (fetch.go), which an
// incremental one is not.
func (n *Node) observeFetch(req *kmsg.FetchRequest, resp *kmsg.FetchResponse) {
	records, bytes := 0, 0
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			p := &resp.Topics[i].Partitions[j]
			if p.ErrorCode != 0 || p.HighWatermark < 0 {
				continue
			}
			count, last := batchRecords(p.RecordBatches)
			records += count
			bytes += len(p.RecordBatches)
			next := last + 1
			if count == 0 {
				// The offset asked, where the answer is laid out as asked (an
				// incremental answer is not, and omits what did not move).
				if i >= len(req.Topics) || j >= len(req.Topics[i].Partitions) ||
					req.Topics[i].Topic != resp.Topics[i].Topic || req.Topics[i].TopicID != resp.Topics[i].TopicID ||
					req.Topics[i].Partitions[j].Partition != p.Partition {
					continue // no offset to measure from
				}
				next = req.Topics[i].Partitions[j].FetchOffset
			}
			n.obs.FetchLag(max(p.HighWatermark-next, 0))
		}
	}
	n.obs.Fetched(records, bytes)
}

// batchRecords reads the batch headers of a fetched partition's record
// set: how many records it holds and the offset of its last. Every batch
// the facade answers is one it encoded (recordbatch.AppendFetchBatch), so
// the fixed v2 header fields are read in place (base offset at 0, length at
// 8, last offset delta at 23, record count at 57) rather than decoding each
// batch again on every answer; a batch that does not fit ends the count.
func batchRecords(set []byte) (records int, last int64) {
	for len(set) >= recordbatch.HeaderLen {
		// The length field (after the base offset) counts from the field
		// after it to the batch's end.
		end := 12 + int(int32(binary.BigEndian.Uint32(set[8:])))
		if end < recordbatch.HeaderLen || end > len(set) || set[16] != 2 {
			break
		}
		records += int(int32(binary.BigEndian.Uint32(set[57:])))
		last = int64(binary.BigEndian.Uint64(set)) + int64(int32(binary.BigEndian.Uint32(set[23:])))
		set = set[end:]
	}
	return records, last
}
