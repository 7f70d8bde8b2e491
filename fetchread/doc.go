// Package fetchread reads Queen's records into Kafka fetch partition
// answers under the response, partition and node budgets, and answers
// ListOffsets' offsets from the same route.
//
// It owns:
//   - a fetch's fill (Fill): each partition's Queen answer re-encoded as one
//     RecordBatch v2, in request order, against partition_max_bytes, the
//     response's budget (MaxResponse, or max_bytes below it) and the node's
//     budget of batches not yet written, the response's first record always
//     taken whole so that a consumer progresses, with the rest of the Queen
//     push it came in (KIP-74's first batch, as far as its topic's
//     max.message.bytes), read again once when Queen's budget cut that push;
//     what each entry asks of Queen (StoredBytes); and the hand-over of what
//     the response holds of the node's budget to the connection that writes
//     it;
//   - the plain read (Fill.Read): Queen's fetch route at most 1,024 entries
//     a call, a wider read chunked and its long poll spent in slices, a
//     chunk Queen refuses failing its own partitions only;
//   - a watched fetch's reads (Watched): what it took from parked calls or
//     read itself, and what it tells the watch round it answered;
//   - ListOffsets' reads (Offsets): the bounds probe, and the binary search
//     over Queen's append clock for a timestamp.
//
// It does not own, and must not reach for:
//   - the node or the wire: it reads through a Conn (the caller's Queen
//     client and logger, and the hold of the node's budget until the
//     response is written), never a connection's framing or lifecycle;
//   - the Kafka request: which partitions a fetch names, their verdicts and
//     refusals, versions, and how the response is laid out are the
//     handler's (package node);
//   - the session protocol: package fetchsession decides what a fetch is
//     and which partitions an answer carries;
//   - the watch: package fetchwatch parks the calls and says what a round
//     must read;
//   - the fault table: a failed read is returned, and its caller maps it
//     (package faults), except a chunk refused whole, answered here with
//     the fetch family's code.
package fetchread
