package node

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/transport"
)

// seedWindows is seed 001's support matrix: the 32 advertised APIs. Our
// windows must contain these (issue 10: nothing older breaks).
var seedWindows = map[kmsg.Key][2]int16{
	kmsg.AddOffsetsToTxn:         {0, 3},
	kmsg.AddPartitionsToTxn:      {0, 3},
	kmsg.AlterConfigs:            {0, 2},
	kmsg.ApiVersions:             {0, 3},
	kmsg.CreateACLs:              {1, 3},
	kmsg.CreatePartitions:        {0, 3},
	kmsg.CreateTopics:            {2, 6},
	kmsg.DeleteACLs:              {1, 3},
	kmsg.DeleteGroups:            {0, 2},
	kmsg.DeleteTopics:            {1, 5},
	kmsg.DescribeACLs:            {1, 3},
	kmsg.DescribeConfigs:         {1, 4},
	kmsg.DescribeGroups:          {0, 3},
	kmsg.EndTxn:                  {0, 3},
	kmsg.Fetch:                   {4, 6},
	kmsg.FindCoordinator:         {0, 3},
	kmsg.Heartbeat:               {0, 2},
	kmsg.IncrementalAlterConfigs: {0, 1},
	kmsg.InitProducerID:          {0, 4},
	kmsg.JoinGroup:               {0, 4},
	kmsg.LeaveGroup:              {0, 2},
	kmsg.ListGroups:              {0, 4},
	kmsg.ListOffsets:             {1, 5},
	kmsg.Metadata:                {0, 9},
	kmsg.OffsetCommit:            {2, 6},
	kmsg.OffsetDelete:            {0, 0},
	kmsg.OffsetFetch:             {1, 7},
	kmsg.Produce:                 {3, 9},
	kmsg.SASLAuthenticate:        {0, 1},
	kmsg.SASLHandshake:           {0, 1},
	kmsg.SyncGroup:               {0, 2},
	kmsg.TxnOffsetCommit:         {0, 3},
}

// seedNotOffered is seed 001's "Not offered" table.
var seedNotOffered = []kmsg.Key{
	kmsg.ConsumerGroupHeartbeat, kmsg.DeleteRecords, kmsg.OffsetForLeaderEpoch,
	kmsg.DescribeLogDirs, kmsg.CreateDelegationToken, kmsg.RenewDelegationToken,
	kmsg.ExpireDelegationToken, kmsg.DescribeDelegationToken, kmsg.ElectLeaders,
	kmsg.AlterPartitionAssignments, kmsg.ListPartitionReassignments,
	kmsg.DescribeClientQuotas, kmsg.AlterClientQuotas, kmsg.DescribeUserSCRAMCredentials,
	kmsg.AlterUserSCRAMCredentials, kmsg.DescribeQuorum, kmsg.DescribeCluster,
	kmsg.DescribeProducers, kmsg.DescribeTransactions, kmsg.ListTransactions,
}

// beyondSeed are the APIs seed 001 does not offer that an issue added, with
// the issue that did.
var beyondSeed = map[kmsg.Key]string{
	kmsg.OffsetForLeaderEpoch: "issue 10",
	kmsg.DescribeCluster:      "issue 10",
	kmsg.DescribeProducers:    "issue 23",
	kmsg.DescribeTransactions: "issue 23",
	kmsg.ListTransactions:     "issue 23",
	// KIP-848's consumer protocol.
	kmsg.ConsumerGroupHeartbeat: "issue 21",
	kmsg.ConsumerGroupDescribe:  "issue 21",
	// KIP-932's share groups.
	kmsg.ShareGroupHeartbeat: "issue 22",
	kmsg.ShareGroupDescribe:  "issue 22",
	// KIP-932's share groups: the data path.
	kmsg.ShareFetch:       "issue 22",
	kmsg.ShareAcknowledge: "issue 22",
	// KIP-932's share groups: the offsets admin APIs.
	kmsg.DescribeShareGroupOffsets: "issue 22",
	kmsg.AlterShareGroupOffsets:    "issue 22",
	kmsg.DeleteShareGroupOffsets:   "issue 22",
}

func TestNotOfferedKeysAreNotAdvertised(t *testing.T) {
	if len(seedNotOffered) != 20 {
		t.Fatalf("seed lists 20 absences, table here has %d", len(seedNotOffered))
	}
	for _, k := range seedNotOffered {
		if _, ok := testTable.Row(k.Int16()); ok && beyondSeed[k] == "" {
			t.Errorf("%s (key %d) is advertised; seed 001 says it is not offered and no issue added it", kmsg.NameForKey(k.Int16()), k)
		}
	}
}

// Every row of the seed's matrix is advertised: a missing one fails here,
// not in a client. A row beyond the seed must be one an issue added.
func TestEverySeedRowIsAdvertised(t *testing.T) {
	if len(seedWindows) != 32 {
		t.Fatalf("seed lists 32 APIs, the table here has %d", len(seedWindows))
	}
	for k := range seedWindows {
		if _, ok := testTable.Row(k.Int16()); !ok {
			t.Errorf("%s (key %d) is in seed 001's support matrix and not advertised", kmsg.NameForKey(k.Int16()), k)
		}
	}
	for _, r := range apiRows {
		k := kmsg.Key(r.Key)
		if _, ok := seedWindows[k]; !ok && beyondSeed[k] == "" {
			t.Errorf("%s (key %d) is advertised, not in seed 001's matrix, and in no issue's list", kmsg.NameForKey(r.Key), r.Key)
		}
	}
}

func TestEveryRowHasAHandlerAndContainsTheSeedWindow(t *testing.T) {
	seen := map[int16]bool{}
	prev := int16(-1)
	for _, r := range apiRows {
		name := kmsg.NameForKey(r.Key)
		if r.Handler == nil {
			t.Errorf("%s: advertised without a handler", name)
		}
		if strings.TrimSpace(r.Why) == "" || strings.ContainsAny(r.Why, "|\n") {
			t.Errorf("%s: the row needs a one-line reason without '|' for the README's matrix", name)
		}
		if seen[r.Key] {
			t.Errorf("%s: two rows", name)
		}
		seen[r.Key] = true
		if r.Key <= prev {
			t.Errorf("%s: rows must be sorted by key (%d after %d)", name, r.Key, prev)
		}
		prev = r.Key
		if r.Min > r.Max {
			t.Errorf("%s: window v%d-v%d is empty", name, r.Min, r.Max)
		}
		if w, ok := seedWindows[kmsg.Key(r.Key)]; ok && (r.Min > w[0] || r.Max < w[1]) {
			t.Errorf("%s: window v%d-v%d drops part of the seed's v%d-v%d", name, r.Min, r.Max, w[0], w[1])
		}
		// Every advertised version must be decodable by kmsg.
		if req := kmsg.RequestForKey(r.Key); req == nil || req.MaxVersion() < r.Max {
			t.Errorf("%s: kmsg cannot decode up to v%d", name, r.Max)
		}
	}
}

var update = flag.Bool("update", false, "rewrite the README's support matrix from the version table")

const (
	matrixBegin = "<!-- support-matrix:begin (generated from node/versions.go: go test ./node/ -run TestREADMESupportMatrix -update) -->"
	matrixEnd   = "<!-- support-matrix:end -->"
)

// supportMatrix is the README's table, rendered from apiRows.
func supportMatrix() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n| API | Key | Versions | Where the window ends, and why |\n| --- | --- | --- | --- |\n", matrixBegin)
	for _, r := range apiRows {
		versions := fmt.Sprintf("v%d–v%d", r.Min, r.Max)
		if r.Min == r.Max {
			versions = fmt.Sprintf("v%d", r.Min)
		}
		fmt.Fprintf(&b, "| `%s` | %d | %s | %s |\n", kmsg.NameForKey(r.Key), r.Key, versions, r.Why)
	}
	b.WriteString(matrixEnd)
	return b.String()
}

// The README's support matrix is the table: a row changed here and not
// there fails, and -update rewrites it.
func TestREADMESupportMatrix(t *testing.T) {
	const path = "../README.md"
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	i, j := strings.Index(readme, matrixBegin), strings.Index(readme, matrixEnd)
	if i < 0 || j < i {
		t.Fatalf("README.md has no support matrix between %q and %q", matrixBegin, matrixEnd)
	}
	want := supportMatrix()
	if got := readme[i : j+len(matrixEnd)]; got != want {
		if !*update {
			t.Fatalf("README.md's support matrix is not the version table; run: go test ./node/ -run TestREADMESupportMatrix -update")
		}
		if err := os.WriteFile(path, []byte(readme[:i]+want+readme[j+len(matrixEnd):]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// The ApiVersions answer is the table, row for row.
func TestApiVersionsAnswerIsTheTable(t *testing.T) {
	n, _ := newTestNode(t, nil)
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	r, err := transport.ApiVersions(t.Context(), testConn(t, n), req)
	if err != nil {
		t.Fatal(err)
	}
	keys := r.(*kmsg.ApiVersionsResponse).ApiKeys
	if len(keys) != len(apiRows) {
		t.Fatalf("%d keys for %d rows", len(keys), len(apiRows))
	}
	for i, k := range keys {
		if k.ApiKey != apiRows[i].Key || k.MinVersion != apiRows[i].Min || k.MaxVersion != apiRows[i].Max {
			t.Errorf("key %d: %+v vs row %+v", i, k, apiRows[i])
		}
	}
}
