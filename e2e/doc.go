// Package e2e holds the end-to-end tests: the real queen-dev and queen-kafka
// binaries, built once per run and started as separate processes on
// loopback, driven by real Kafka clients (franz-go kgo/kadm, IBM/sarama,
// segmentio/kafka-go, librdkafka through confluent-kafka-go, which needs cgo,
// and the kcat command-line tool) and by plain HTTP against queen-dev. What
// is asserted is what a client or an operator can observe on the wire, in
// exit codes and in logs; the product's packages are imported only for
// their pure rules and vocabulary, never to drive a facade: the stored
// envelope and Queen's wire types (envelope, queen), who owns a key
// (hashring), the dedup keys a batch must carry (producer), the record
// codec the benchmarks' direct paths and floor run and its test batches
// (recordbatch, recordbatch/batchtest), and the --help text (config).
//
// The package has no non-test code beyond this comment. The bodies in
// single_test.go take the bootstrap address as a parameter so that the same
// assertions run against a single-mode facade (TestSingleNode) and,
// unchanged, against a cluster of three (TestClusterBodies).
//
// It is a module of its own (github.com/queen-mq/queen-kafka/e2e), joined to
// the product module by the repository's go.work, so that every test-only
// client (sarama, confluent-kafka-go and its cgo build, kafka-go, kfake,
// kadm, k8s.io/api) is a requirement of this module and never of the
// product's: a user who builds or imports the facade does not pull them.
// The product's internal packages stay importable here (same path prefix).
//
// TestMain builds ./cmd/queen-dev and ./cmd/queen-kafka once per run from
// the product module's root, or from E2E_SRC when that is set (a clean
// export of a commit, to test committed code while a shared tree is
// mid-edit). kcat must
// be installed: the kcat tests fail, never skip, without it.
//
// The test binary doubles as the exactly-once worker of txn_eos_test.go:
// run with QK_E2E_EOS_WORKER set, an init function runs the worker's
// consume-transform-produce loop instead of the tests, so that the test can
// kill -9 a real process in the middle of a transaction.
package e2e
