// Package producer is the facade's producer state: producer ids, epochs and
// the sequence windows of idempotent (and, later, transactional) batches
// (seed 001, "Transactions and the idempotent producer").
//
// It owns:
//   - producer id allocation (IDs.Next): blocks of IDBlock ids reserved by
//     compare-and-set on the one queen.ProducerIDsKey row of Queen's KV,
//     so ids are unique across nodes and restarts; the next block is
//     reserved in the background when the current one is half spent, and
//     each scope reserves under its own lock, never one held across a KV
//     call, so a hung KV costs no InitProducerId while an id is left;
//   - epochs (Sequencer.Grant): the epoch a producer was granted, or the
//     newest its batches carried (a client's local KIP-360 bump), fences
//     every older one; a producer's state is never evicted while a request
//     holds or waits for it;
//   - the sequence windows, bounded and evicted least recently used: the
//     last five batches of each producer-partition with the offsets they
//     got, so that a retry is answered from the window and a gap refused;
//   - the sequencing of a group of produce requests (Sequencer.Sequence)
//     and its settling once written (Sequencer.Settle): each Batch is
//     marked Write, refused or answered as a repeat, exactly as running the
//     requests one by one would answer, and a batch behind a failed write
//     is decided again against the window as it stands.
//
// A caller's flow, per group of one scope (the connection's identity):
//
//	unlock := seq.Sequence(scope, batches) // producers locked, Write decided
//	defer unlock()
//	// write every batch marked Write; record its Outcome
//	seq.Settle(batches)                    // every Batch's Answer
//
// Transactions (issue 8, package txn) use the same pieces: IDs.Next
// allocates a transactional id's producer id, Grant records the epoch the
// id was claimed or bumped to in its qk:txn: row (fencing the older
// epoch's batches), and a transactional batch is sequenced with Sequence
// and Settle like an idempotent one, its Outcome the stage's (Base -1, as
// a staged batch has no offset yet).
//
// It does not own: the Kafka wire (package transport reads the requests and
// writes the answers package node's Produce handler builds; this package
// sees Batch headers and outcomes), the record
// codec (package recordbatch; a batch that did not decode comes with its
// recordbatch.Fault), the push to Queen (package producepush), the mapping of
// a Queen failure to a Kafka code (the caller's), and any transaction state.
// It never imports package node.
package producer
