package txn

// A commit is one POST /api/v1/transaction (§8), and Queen refuses a body
// past its ceiling (Limits.MaxCommitBody) with 413: such a transaction can
// never commit atomically, whatever the other caps allow. So each staged
// record is counted at what it adds to the commit body, and a batch that
// would take the body past the ceiling is refused when it is staged.

import "github.com/queen-mq/queen-kafka/coordinator"

const (
	// itemFrame bounds what one push item adds to its queue, partition,
	// payload and transactionId: {"queue":"","partition":"",
	// "payload":,"transactionId":""} and a comma are 58 bytes; topic
	// names, partitions and dedup keys never need escaping.
	itemFrame = 64
	// partitionDigits bounds a partition's decimal form.
	partitionDigits = 11
	// riderReserve is the body kept for the kv rider and the request's
	// own framing: the rider's 64 ops, each at most an offset write
	// whose metadata (coordinator.MaxMetadataBytes) is escaped at worst
	// six-fold, with 2 KiB for its key and other fields.
	riderReserve = riderOps*(coordinator.MaxMetadataBytes*6+2<<10) + 1<<10
)

// itemBytes is what one record adds to its commit body.
func itemBytes(topic string, payload []byte, key string) int64 {
	return int64(itemFrame + len(topic) + partitionDigits + len(payload) + len(key))
}

// bodyRoom is the commit body the records may take.
func (lim Limits) bodyRoom() int64 { return lim.MaxCommitBody - riderReserve }
