package e2e

import (
	"strings"
	"testing"
)

// franz-go's own KIP-848 integration tests (runFranzKgo) against one
// facade and a 3-node cluster. They decide allow848 from ApiVersions (key
// 68 at v1 or later) and skip otherwise.
//
// The tests that skip on a broker without KIP-848, and which of them run:
//   - TestGroupETL/range/848, TestGroupETL/sticky/848,
//     TestGroupETL/sticky/848/static and TestGroupSimple/848: run.
//   - TestTxnEtl/*/848: not run. TestTxnEtl fails on this facade whatever
//     the protocol: its producer checks that transactional produce answers
//     an offset, and the facade answers base_offset -1 until EndTxn
//     allocates them (docs/transactions.md).
//   - Test848RegexBrokerResolves: not run. It needs __consumer_offsets to
//     appear as an internal topic after a FindCoordinator, and the facade
//     has no internal topics.
//
// go test's -run cannot name TestGroupETL/range/848 without also running
// TestGroupETL/range (a classic group, whose name is a prefix of the
// pattern's): it runs too and must pass like the others.
//
// TestGroupSimple/848 reads allow848 without calling franz-go's adm(),
// which sets it: in franz-go's full suite an earlier test has, and here,
// with only these tests, TestGroupSimple/848 would skip or not depending
// on whether TestGroupETL's adm() call won a race. TestPauseIssueOct2023
// (1.5 s, a sequential test, which go test runs before any parallel one
// resumes) calls adm() first; it must pass too.
const franz848Run = `^(TestPauseIssueOct2023|TestGroupETL|TestGroupSimple)$/^(range|sticky|848)$/^848$`

// franz848Want is every test the run must pass; a SKIP or FAIL of any test
// in the run fails too.
var franz848Want = []string{
	"TestPauseIssueOct2023",
	"TestGroupETL/range/848",
	"TestGroupETL/sticky/848",
	"TestGroupETL/sticky/848/static",
	"TestGroupSimple/848",
}

// franz848Records is KGO_TEST_RECORDS (franz-go's default is 500,000): a
// chain of three groups over 30,000 records still outlives the chain's
// second wave of members, which joins after 5 s, so the rebalances the
// test is about happen mid-stream.
const franz848Records = 30000

// franz848StaleCommit is what franz-go's testChainETL logs, once per chain,
// when a commit in OnPartitionsRevoked is refused STALE_MEMBER_EPOCH: it
// then skips that chain's record checks and passes. Kafka before KIP-1251
// (4.3) refuses such a commit when the member's revocation acknowledgement
// overtakes it, and so does the facade (its commits check the member epoch
// as Kafka 4.2 does), so one chain may skip; a run in which every 848 chain
// skipped its checks verified nothing and fails.
const franz848StaleCommit = "pre-KIP-1251 stale commit encountered, skipping validation"

// franz848Chains is the number of TestGroupETL's 848 chains.
const franz848Chains = 3

func TestFranzGo848(t *testing.T) {
	t.Parallel()
	bin := franzKgoBinary(t)
	run := kgoRun{pattern: franz848Run, want: franz848Want, records: franz848Records, check: franz848Chained}
	t.Run("single", func(t *testing.T) {
		dev := startQueenDev(t, devOptions{})
		fac := startFacade(t, dev, consumerGroupEnv)
		runFranzKgo(t, bin, []string{fac.addr}, 1, run)
	})
	t.Run("cluster", func(t *testing.T) {
		c := newTestCluster(t, clusterOpts{nodes: 3, env: consumerGroupEnv})
		runFranzKgo(t, bin, c.addrs(), 3, run)
	})
}

// franz848Chained fails a run in which every 848 chain skipped its record
// checks, and logs how many did.
func franz848Chained(t *testing.T, out string) string {
	stale := strings.Count(out, franz848StaleCommit)
	if stale > 0 {
		t.Logf("franz-go skipped the record checks of %d of %d 848 chains (%q): a commit in OnPartitionsRevoked was refused STALE_MEMBER_EPOCH", stale, franz848Chains, franz848StaleCommit)
	}
	if stale >= franz848Chains {
		return "every 848 chain skipped its record checks: the run verified nothing"
	}
	return ""
}
