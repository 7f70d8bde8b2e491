package producer

import "strconv"

// Durable idempotence (issue 9). Every record of an idempotent or
// transactional batch is pushed with a Queen transactionId derived from its
// producer id, epoch and sequence (queen-api §5), which Queen deduplicates
// per (queue, partition) inside the queue's dedupWindowSeconds. A batch
// retried after an answer that was lost (a push Queen committed whose 201
// never arrived, a restart, a producer that moved to another node) carries
// the same keys and is answered `duplicate` with the ORIGINAL offsets,
// which the facade answers as the batch's base offset, as Kafka answers a
// duplicate. The in-memory window stays the fast path (a retry it still
// holds never reaches Queen) and the gap check.
//
// The key is "kafka:<pid>:<epoch>:<seq>" in decimal: ASCII, far under §5's
// 65,535 bytes, and prefixed so that it cannot meet a key a native Queen
// producer chose unless that producer chose this shape. Producer ids are
// unique per tenant across nodes and restarts (IDs), and a queue belongs
// to one tenant, so a key names one record of one producer.

// dedupPrefix starts every key.
const dedupPrefix = "kafka:"

// DedupKeys returns the keys of the n records of a batch of producer pid
// at epoch whose first sequence is first (record i is first+i, wrapping
// at MaxInt32 as Kafka's sequences do). The keys share one backing string,
// so a batch costs a few allocations whatever its size.
func DedupKeys(pid int64, epoch int16, first int32, n int) []string {
	if n <= 0 {
		return nil
	}
	head := strconv.AppendInt([]byte(dedupPrefix), pid, 10)
	head = append(head, ':')
	head = strconv.AppendInt(head, int64(epoch), 10)
	head = append(head, ':')
	buf := make([]byte, 0, n*(len(head)+10))
	ends := make([]int, n)
	seq := first
	for i := range n {
		buf = append(buf, head...)
		buf = strconv.AppendInt(buf, int64(seq), 10)
		ends[i] = len(buf)
		seq = seqAdd(seq, 1)
	}
	all := string(buf)
	keys := make([]string, n)
	from := 0
	for i, end := range ends {
		keys[i] = all[from:end]
		from = end
	}
	return keys
}
