// Package batchtest builds produce batches the way Kafka producers encode
// them (every codec, CRC included) and the decompression bombs the decode
// budget must refuse, for the tests of package recordbatch and of the
// handlers that take record batches. Only tests import it.
//
// It owns the encodings of test batches only; it must not be imported by
// non-test code, and what a batch decodes to is package recordbatch's.
package batchtest
