package e2e

import (
	"regexp"
	"strconv"
	"testing"
)

// franz-go's own KIP-932 share-group integration tests (runFranzKgo)
// against one facade and a 3-node cluster (issue 22). They decide
// allowShare from ApiVersions (ShareFetch and ShareAcknowledge at v2 or
// later) and skip otherwise, which a run here fails.
//
// The tests that skip on a broker without share groups, and which run:
//   - TestShareGroupETL: a two-level share ETL (seven then eight share
//     consumers with every ack strategy, RELEASE, REJECT, consumers leaving
//     mid-stream) over group configs set with IncrementalAlterConfigs and
//     polled back with DescribeConfigs; TestShareGroupAckOnClose (acks sent
//     by Close alone); TestShareGroupOffsetsAdmin (Alter-, Describe- and
//     DeleteShareGroupOffsets); TestShareGroup (one consumer, 200 records):
//     run.
//   - TestConsumeRegexShareSkipsInternal: not run. It needs an internal
//     topic (__consumer_offsets) to exist, and the facade has none.
//   - TestAuditShare*: not run; they need no broker (unit tests of the
//     client's internals) and skip nothing.
const franzShareRun = `^(TestShareGroupETL|TestShareGroupAckOnClose|TestShareGroupOffsetsAdmin|TestShareGroup)$`

// franzShareWant is every test the run must pass.
var franzShareWant = []string{
	"TestShareGroupETL",
	"TestShareGroupAckOnClose",
	"TestShareGroupOffsetsAdmin",
	"TestShareGroup",
}

// franzShareRecords is KGO_TEST_RECORDS for TestShareGroupETL (franz-go's
// default is 500,000), as the 848 runner's: enough that the ETL's phases
// (more consumers at a fifth of the records consumed, one leaving at half,
// two rebalances of the second level at a third and two thirds) happen
// mid-stream; about 20 s of ETL on one node or three.
const franzShareRecords = 30000

// franzShareRejected is TestShareGroupETL's closing line for level 1: a
// run in which no key stayed rejected never exercised REJECT's archiving.
var franzShareRejected = regexp.MustCompile(`level 1: (\d+) purely rejected, (\d+) redelivered`)

func TestFranzGoShare(t *testing.T) {
	t.Parallel()
	bin := franzKgoBinary(t)
	run := kgoRun{pattern: franzShareRun, want: franzShareWant, records: franzShareRecords, check: franzShareArchived}
	t.Run("single", func(t *testing.T) {
		dev := startQueenDev(t, devOptions{})
		fac := startFacade(t, dev, shareGroupEnv)
		runFranzKgo(t, bin, []string{fac.addr}, 1, run)
	})
	t.Run("cluster", func(t *testing.T) {
		c := newTestCluster(t, clusterOpts{nodes: 3, env: shareGroupEnv})
		runFranzKgo(t, bin, c.addrs(), 3, run)
	})
}

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
