// Package envelope is the payload envelope of a stored record (contract
// §11): a Kafka record's key, value, headers and CreateTime as the JSON
// object Queen stores, written by Append (keys h, k, t, v, byte-identical to
// a sorted-key encoder) and read back by DecodePayload, which serves any
// payload that is not strictly an envelope as a native one. Record and
// Header are the record's content as it travels between the record codec
// (package recordbatch) and the Queen client (package queen), which both
// import this package rather than each other.
//
// It owns the envelope's shape and its two decoders (the canonical fast
// path and the strict general one, kept in agreement by
// FuzzEnvelopeFastPath), nothing else: no Kafka batch, no Queen route or
// body, no record time format (queen.ParseTS). It is a leaf: of the project
// it imports only internal/jsontext, the JSON string rules it is written
// and read with.
package envelope
