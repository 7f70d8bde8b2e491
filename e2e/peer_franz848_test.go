package e2e

import (
	"strings"
	"testing"
)

// franz-go's own KIP-848 integration tests, run in TestFranzGoKgoAll
// (peer_franzall_test.go) with the rest of pkg/kgo against one facade and
// a 3-node cluster. They decide allow848 from ApiVersions (key 68 at v1 or
// later) and skip otherwise, which fails the run.
//
// TestGroupSimple/848 reads allow848 without calling franz-go's adm(),
// which sets it; TestPauseIssueOct2023, a sequential test that go test
// runs before any parallel one resumes, calls adm() first.
// Test848RegexBrokerResolves fails: it needs __consumer_offsets as an
// internal topic, and the facade has none (franzAllKnown).

// franz848Want is every KIP-848 test the run must pass.
var franz848Want = []string{
	"TestPauseIssueOct2023",
	"TestGroupETL/range/848",
	"TestGroupETL/sticky/848",
	"TestGroupETL/sticky/848/static",
	"TestGroupSimple/848",
}

// franz848StaleCommit is what franz-go's testChainETL logs, once per chain,
// when a commit in OnPartitionsRevoked is refused STALE_MEMBER_EPOCH: it
// then skips that chain's record checks and passes. Kafka before KIP-1251
// (4.3) refuses such a commit when the member's revocation acknowledgement
// overtakes it, and so does the facade (its commits check the member epoch
// as Kafka 4.2 does), so one chain may skip; a run in which every 848 chain
// skipped its checks verified nothing and fails.
const franz848StaleCommit = "pre-KIP-1251 stale commit encountered, skipping validation"

// franz848Chains is the number of 848 chains of the run: TestGroupETL's
// and TestTxnEtl's range/848, sticky/848 and sticky/848/static.
const franz848Chains = 6

// franz848Chained fails a run in which every 848 chain skipped its record
// checks, and logs how many did.
func franz848Chained(t *testing.T, out string) string {
	chains := franz848Chains
	stale := strings.Count(out, franz848StaleCommit)
	if stale > 0 {
		t.Logf("franz-go skipped the record checks of %d of %d 848 chains (%q): a commit in OnPartitionsRevoked was refused STALE_MEMBER_EPOCH", stale, chains, franz848StaleCommit)
	}
	if stale >= chains {
		return "every 848 chain skipped its record checks: the run verified nothing"
	}
	return ""
}
