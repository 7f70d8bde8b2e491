package e2e

import (
	"regexp"
	"strconv"
	"testing"
)

// franz-go's own KIP-932 share-group integration tests (issue 22), run in
// TestFranzGoKgoAll (peer_franzall_test.go) with the rest of pkg/kgo
// against one facade and a 3-node cluster. They decide allowShare from
// ApiVersions (ShareFetch and ShareAcknowledge at v2 or later) and skip
// otherwise, which fails the run.
//
//   - TestShareGroupETL: a two-level share ETL (seven then eight share
//     consumers with every ack strategy, RELEASE, REJECT, consumers leaving
//     mid-stream) over group configs set with IncrementalAlterConfigs and
//     polled back with DescribeConfigs; TestShareGroupAckOnClose (acks sent
//     by Close alone); TestShareGroupOffsetsAdmin (Alter-, Describe- and
//     DeleteShareGroupOffsets); TestShareGroup (one consumer, 200 records).
//   - TestConsumeRegexShareSkipsInternal fails: it needs an internal
//     topic (__consumer_offsets), and the facade has none (franzAllKnown).

// franzShareWant is every test the run must pass.
var franzShareWant = []string{
	"TestShareGroupETL",
	"TestShareGroupAckOnClose",
	"TestShareGroupOffsetsAdmin",
	"TestShareGroup",
}

// franzShareRejected is TestShareGroupETL's closing line for level 1: a
// run in which no key stayed rejected never exercised REJECT's archiving.
var franzShareRejected = regexp.MustCompile(`level 1: (\d+) purely rejected, (\d+) redelivered`)

// franzShareArchived fails a run whose ETL archived nothing by REJECT or
// redelivered nothing.
func franzShareArchived(t *testing.T, out string) string {
	m := franzShareRejected.FindStringSubmatch(out)
	if m == nil {
		return "TestShareGroupETL printed no level 1 summary (" + franzShareRejected.String() + ")"
	}
	rejected, _ := strconv.Atoi(m[1])
	redelivered, _ := strconv.Atoi(m[2])
	t.Logf("TestShareGroupETL level 1: %d keys archived by REJECT, %d redelivered", rejected, redelivered)
	if rejected == 0 {
		return "TestShareGroupETL: no key stayed rejected at level 1"
	}
	return ""
}
