// Package faults is the facade's fault table: which Kafka error code,
// throttle_time_ms and error_message a client is answered when a call to
// Queen fails, per API family (produce, fetch, list offsets, producer ids,
// topic reads and writes, transactions, SASL), and how a push's per-item
// results read as one partition's outcome.
//
// It owns the mapping, as data (one rule per family) and one apply, and
// the spacing of the warnings a failing Queen repeats at every request
// (Log, Warn). It must not reach for connections, handlers, the catalogue
// or group state: a caller hands it the error (and, to log one, its
// logger) and puts the answer where its response wants it. The group and offset APIs'
// column is GroupCode, shared by the classic coordinator and the KIP-848
// consumergroup package, each of which maps its own lost-fence error first.
package faults
