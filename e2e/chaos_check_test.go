package e2e

import (
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The checker of the chaos test (chaos_test.go, build tag chaos): what it
// counts from the acknowledgements, the log read back and the group's
// polls. It is untagged so that its own test runs in make test.

// ack is one acknowledged record: its unique id and where the broker said
// it is, or offsetUnknown.
type ack struct {
	id        string
	partition int32
	offset    int64
}

// offsetUnknown is the offset of a record librdkafka acknowledged without
// a broker's answer for it (RD_KAFKA_OFFSET_INVALID): an idempotent
// producer whose request went unanswered (a node killed, a timeout) and
// whose later sequence the broker then took knows the earlier records are
// stored, and reports them delivered at no offset (rd_kafka_dr_implicit_ack).
// Such an acknowledgement is checked for being stored, not for where.
const offsetUnknown = -1001

// poll is one record a group member was given, in the member's assignment
// generation gen (bumped on every assignment, revocation and loss).
type poll struct {
	member, gen int
	partition   int32
	offset      int64
	id          string
}

// chaosReport is what the checker found.
type chaosReport struct {
	lost, storedDups, mismatched, skips, backwards, redelivered int
	unplaced                                                    int      // acknowledged at offsetUnknown
	details                                                     []string // the first few of each kind
}

// checkChaos compares the acknowledgements and the group's polls with the
// log read back. A poll skip is two consecutive records one member was
// given from one partition in one generation with a stored record between
// them (by position in the log read back, not by offset arithmetic).
func checkChaos(acked []ack, stored []*kgo.Record, given []poll) chaosReport {
	var r chaosReport
	note := func(n *int, f string, args ...any) {
		*n++
		if *n <= 5 {
			r.details = append(r.details, fmt.Sprintf(f, args...))
		}
	}
	type pos struct {
		p   int32
		off int64
	}
	at := map[pos]string{}
	count := map[string]int{}
	offs := map[int32][]int64{}
	for _, s := range stored {
		at[pos{s.Partition, s.Offset}] = string(s.Value)
		count[string(s.Value)]++
		offs[s.Partition] = append(offs[s.Partition], s.Offset)
	}
	index := map[pos]int{}
	for p, ps := range offs {
		slices.Sort(ps)
		for i, o := range ps {
			index[pos{p, o}] = i
		}
	}
	for id, n := range count {
		if n > 1 {
			note(&r.storedDups, "%s stored %d times", id, n)
		}
	}
	for _, k := range acked {
		switch v, ok := at[pos{k.partition, k.offset}]; {
		case count[k.id] == 0:
			note(&r.lost, "%s acknowledged at %d@%d, not stored", k.id, k.partition, k.offset)
		case k.offset == offsetUnknown:
			r.unplaced++
		case !ok || v != k.id:
			note(&r.mismatched, "%s acknowledged at %d@%d, which holds %q", k.id, k.partition, k.offset, v)
		}
	}
	type stream struct {
		member, gen int
		p           int32
	}
	last := map[stream]int64{}
	given1 := map[string]int{}
	for _, g := range given {
		given1[g.id]++
		s := stream{g.member, g.gen, g.partition}
		prev, ok := last[s]
		last[s] = g.offset
		if !ok {
			continue
		}
		i, j := index[pos{g.partition, prev}], index[pos{g.partition, g.offset}]
		switch {
		case j <= i:
			r.backwards++
		case j > i+1:
			note(&r.skips, "member %d generation %d skipped %d records of partition %d between offsets %d and %d", g.member, g.gen, j-i-1, g.partition, prev, g.offset)
		}
	}
	for _, n := range given1 {
		if n > 1 {
			r.redelivered++
		}
	}
	return r
}

// TestChaosChecker: the checker finds each anomaly it counts, in a history
// made up to hold exactly one of each, and nothing in a clean one.
func TestChaosChecker(t *testing.T) {
	log := func(vals ...string) []*kgo.Record { // partition 0, offsets 0.., a gap before the last
		var rs []*kgo.Record
		for i, v := range vals {
			off := int64(i)
			if i == len(vals)-1 {
				off += 5 // offsets need not be dense: positions count, not arithmetic
			}
			rs = append(rs, &kgo.Record{Partition: 0, Offset: off, Value: []byte(v)})
		}
		return rs
	}
	clean := checkChaos(
		[]ack{{"a", 0, 0}, {"b", 0, offsetUnknown}, {"c", 0, 7}},
		log("a", "b", "c"),
		[]poll{{1, 1, 0, 0, "a"}, {1, 1, 0, 1, "b"}, {1, 1, 0, 7, "c"}, {2, 2, 0, 1, "b"}})
	if clean.lost+clean.storedDups+clean.mismatched+clean.skips+clean.backwards != 0 || clean.redelivered != 1 || clean.unplaced != 1 {
		t.Errorf("clean history: %+v", clean)
	}
	bad := checkChaos(
		[]ack{{"a", 0, 0}, {"x", 0, 9}, {"b", 0, 3}, {"y", 0, offsetUnknown}, {"c", 0, -1}},
		log("a", "b", "b", "c"),
		[]poll{{1, 1, 0, 0, "a"}, {1, 1, 0, 2, "b"}, {1, 1, 0, 1, "b"}})
	// y, acknowledged at no offset, was never stored: lost; c at -1 is a
	// position, and a wrong one.
	want := chaosReport{lost: 2, storedDups: 1, mismatched: 2, skips: 1, backwards: 1, redelivered: 1}
	bad.details = nil
	if bad.lost != want.lost || bad.storedDups != want.storedDups || bad.mismatched != want.mismatched ||
		bad.skips != want.skips || bad.backwards != want.backwards || bad.redelivered != want.redelivered {
		t.Errorf("bad history: %+v, want %+v", bad, want)
	}
}
