// Package e2e holds the end-to-end tests: the real queen-dev and queen-kafka
// binaries, built once per run and started as separate processes on
// loopback, driven by real Kafka clients (franz-go kgo/kadm, IBM/sarama,
// segmentio/kafka-go and the kcat command-line tool) and by plain HTTP
// against queen-dev. Nothing here reaches into the product's packages: what
// is asserted is what a client or an operator can observe on the wire, in
// exit codes and in logs.
//
// The package has no non-test code beyond this comment. The bodies in
// single_test.go take the bootstrap address as a parameter so that the same
// assertions run against a single-mode facade and, unchanged, against a
// cluster-mode one.
package e2e
