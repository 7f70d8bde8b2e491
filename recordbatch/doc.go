// Package recordbatch is the Kafka RecordBatch v2 codec of the facade.
//
// It owns: the produce-side checks of one partition's batch (ParseProduce:
// magic 2, exactly one batch, CRC-32C, no control batches, a known codec),
// decompression (gzip, snappy raw and xerial, lz4, zstd) streamed through a
// limit so that a declared size is never trusted, the walk of a batch's
// records into Queen payload envelopes (Decoder.Envelopes), the decode
// budget every produce request of a process is paid on (Pool, holding a
// budget.Budget), and the fetch-side encoding of stored records as one
// batch, uncompressed (AppendFetchBatch) or compressed with any of the
// four codecs (Encoder.AppendFetchBatch, never larger than the uncompressed
// batch), and Kafka's names of the codecs and the Fetch version each needs.
//
// Bad input never crashes and never buys memory: every refusal is a Fault
// carrying the Kafka error code a broker would send (CORRUPT_MESSAGE,
// INVALID_RECORD, MESSAGE_TOO_LARGE), and what one request may decompress
// and cost once decoded is bounded by the frame ceiling the caller passes in
// Limits. A claim never waits while holding budget: a Busy fault asks the
// caller to Restart, which gives everything back before it waits.
//
// It does not own: the Kafka wire of requests and responses (package
// transport reads and writes the frames, package node's handlers answer
// them; this package sees one partition's record bytes), the Queen HTTP client or any call to Queen (it only writes and
// reads package envelope's format), producer ids and sequence numbers
// (ParseProduce reads them; deciding a batch's sequence is not done here),
// the facade's configuration (the ceilings come in as Limits), and which
// codec a topic's answers use (its compression.type, package catalogue's).
package recordbatch
