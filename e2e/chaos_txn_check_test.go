package e2e

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The checker of the transactional chaos test (chaos_txn_test.go, build tag
// chaos): Jepsen's anomaly classes for consume-transform-produce, counted
// from the workers' history, the input and output read back read_committed
// and the group's committed offsets. It is untagged so that its own test
// runs in make test.

// txnOutcome is what a worker knows of one transaction from its client.
type txnOutcome int

const (
	// txnUnfinished: no EndTxn was ever sent (the client was closed or
	// fenced mid-transaction): the transaction must not be visible.
	txnUnfinished txnOutcome = iota
	// txnCommitted: EndTxn(commit) was answered without error.
	txnCommitted
	// txnAborted: EndTxn(abort) was answered without error.
	txnAborted
	// txnUnknown: the end was asked and not answered, or answered with an
	// error: either outcome is allowed, but never a part of it.
	txnUnknown
)

func (o txnOutcome) String() string {
	return [...]string{"unfinished", "committed", "aborted", "unknown"}[o]
}

// txnRec is one transaction of one worker: its tag (in every output
// record it wrote), the input values it copied and its outcome.
type txnRec struct {
	tag     string
	values  []string
	outcome txnOutcome
}

// txnPoll is one input record a worker was given, in the worker's poll
// sequence seq: one client incarnation between two rewinds (an abort, an
// assignment change), within which offsets only go forward.
type txnPoll struct {
	worker    string
	seq       int
	partition int32
	offset    int64
	at        time.Time // when the worker was given it (zero in the checker's own test)
}

// txnOutValue is the value a worker writes for input value in in the
// transaction tagged tag; parseTxnOut reverses it.
func txnOutValue(in, tag string) string { return in + "|" + tag }

func parseTxnOut(v string) (in, tag string, ok bool) {
	return strings.Cut(v, "|")
}

// txnReport is what the checker counts. The classes are Jepsen's: every
// one must be 0.
type txnReport struct {
	txns, committed, aborted, unfinished, unknown int
	// lost: records of a committed transaction missing from the output.
	lost int
	// abortedRead: output records of an aborted or never-ended transaction.
	abortedRead int
	// torn: transactions of which some records are visible and some not.
	torn int
	// duplicate: input values copied into the output more than once.
	duplicate int
	// offsets: input records whose copies disagree with the committed
	// offset (below it and not copied, or at/after it and copied).
	offsets int
	// nonmonotonic: a poll whose offset is not past the previous one of
	// the same partition in the same poll sequence.
	nonmonotonic int
	// phantom: output records no transaction of the history wrote.
	phantom int
	details []string // the first few of each class
}

func (r txnReport) failures() int {
	return r.lost + r.abortedRead + r.torn + r.duplicate + r.offsets + r.nonmonotonic + r.phantom
}

func (r txnReport) String() string {
	return fmt.Sprintf("%d transactions (%d committed, %d aborted, %d never ended, %d unknown): lost write %d, aborted read %d, torn transaction %d, duplicate %d, offset inconsistency %d, nonmonotonic poll %d, phantom %d",
		r.txns, r.committed, r.aborted, r.unfinished, r.unknown, r.lost, r.abortedRead, r.torn, r.duplicate, r.offsets, r.nonmonotonic, r.phantom)
}

// checkTxns checks one pipeline: input is the input topic read back,
// output the output topic read back read_committed, committed the group's
// committed offset per input partition (absent: none), txns and polls the
// workers' history.
func checkTxns(input, output []*kgo.Record, committed map[int32]int64, txns []txnRec, polls []txnPoll) txnReport {
	var r txnReport
	note := func(n *int, f string, args ...any) {
		*n++
		if *n <= 5 {
			r.details = append(r.details, fmt.Sprintf(f, args...))
		}
	}
	visible := map[string]map[string]int{} // tag → input value → copies
	copies := map[string]int{}             // input value → copies
	by := map[string][]string{}            // input value → the tags of its copies
	for _, o := range output {
		in, tag, ok := parseTxnOut(string(o.Value))
		if !ok {
			note(&r.phantom, "output %d@%d holds %q, no worker's record", o.Partition, o.Offset, o.Value)
			continue
		}
		if visible[tag] == nil {
			visible[tag] = map[string]int{}
		}
		visible[tag][in]++
		copies[in]++
		by[in] = append(by[in], tag)
	}
	known := map[string]bool{}
	for _, t := range txns {
		known[t.tag] = true
		r.txns++
		switch t.outcome {
		case txnCommitted:
			r.committed++
		case txnAborted:
			r.aborted++
		case txnUnfinished:
			r.unfinished++
		case txnUnknown:
			r.unknown++
		}
		seen := 0
		for _, v := range t.values {
			if visible[t.tag][v] > 0 {
				seen++
			}
		}
		switch {
		case t.outcome == txnCommitted && seen < len(t.values):
			note(&r.lost, "transaction %s committed %d records, %d visible", t.tag, len(t.values), seen)
			r.lost += len(t.values) - seen - 1
		case (t.outcome == txnAborted || t.outcome == txnUnfinished) && seen > 0:
			note(&r.abortedRead, "transaction %s %s, %d of its %d records visible", t.tag, t.outcome, seen, len(t.values))
			r.abortedRead += seen - 1
		}
		if seen > 0 && seen < len(t.values) {
			note(&r.torn, "transaction %s (%s): %d of its %d records visible", t.tag, t.outcome, seen, len(t.values))
		}
	}
	for tag, vs := range visible {
		if !known[tag] {
			note(&r.phantom, "%d output records of transaction %s, which no worker began", len(vs), tag)
		}
	}
	outcome := map[string]txnOutcome{}
	for _, t := range txns {
		outcome[t.tag] = t.outcome
	}
	for v, n := range copies {
		if n > 1 {
			var who []string
			for _, tag := range by[v] {
				who = append(who, tag+" "+outcome[tag].String())
			}
			note(&r.duplicate, "input %s copied %d times, by %s", v, n, strings.Join(who, ", "))
		}
	}
	for _, in := range input {
		v := string(in.Value)
		end, ok := committed[in.Partition]
		switch below := ok && in.Offset < end; {
		case below && copies[v] == 0:
			note(&r.offsets, "input %s at %d@%d is below the committed offset %d and was never copied", v, in.Partition, in.Offset, end)
		case !below && copies[v] > 0:
			note(&r.offsets, "input %s at %d@%d is at or past the committed offset %d (committed: %v) and was copied", v, in.Partition, in.Offset, end, ok)
		}
	}
	type stream struct {
		worker    string
		seq       int
		partition int32
	}
	last := map[stream]txnPoll{}
	for _, p := range polls {
		s := stream{p.worker, p.seq, p.partition}
		if prev, ok := last[s]; ok && p.offset <= prev.offset {
			note(&r.nonmonotonic, "worker %s poll sequence %d: partition %d went from offset %d (at %s) to %d (at %s)",
				p.worker, p.seq, p.partition, prev.offset, prev.at.Format("15:04:05.000"), p.offset, p.at.Format("15:04:05.000"))
		}
		last[s] = p
	}
	sort.Strings(r.details)
	return r
}

// TestTxnChecker: the checker finds each class in a history made up to
// hold it, and nothing in a clean one.
func TestTxnChecker(t *testing.T) {
	in := func(vals ...string) []*kgo.Record {
		var rs []*kgo.Record
		for i, v := range vals {
			rs = append(rs, &kgo.Record{Partition: 0, Offset: int64(i), Value: []byte(v)})
		}
		return rs
	}
	out := func(pairs ...string) []*kgo.Record { // value, tag, value, tag...
		var rs []*kgo.Record
		for i := 0; i < len(pairs); i += 2 {
			rs = append(rs, &kgo.Record{Partition: 0, Offset: int64(i / 2), Value: []byte(txnOutValue(pairs[i], pairs[i+1]))})
		}
		return rs
	}
	input := in("a", "b", "c", "d")
	history := []txnRec{
		{"w.0.1", []string{"a", "b"}, txnAborted},
		{"w.0.2", []string{"a", "b"}, txnCommitted},
		{"w.0.3", []string{"c"}, txnUnfinished},
		{"w.1.1", []string{"c"}, txnUnknown},
		{"w.1.2", []string{"d"}, txnCommitted},
	}
	polls := []txnPoll{{"w", 1, 0, 0, time.Time{}}, {"w", 1, 0, 1, time.Time{}}, {"w", 2, 0, 0, time.Time{}}, {"w", 2, 0, 1, time.Time{}}}
	clean := checkTxns(input, out("a", "w.0.2", "b", "w.0.2", "c", "w.1.1", "d", "w.1.2"), map[int32]int64{0: 4}, history, polls)
	if clean.failures() != 0 || clean.txns != 5 || clean.committed != 2 || clean.unknown != 1 {
		t.Errorf("clean history: %v %v", clean, clean.details)
	}
	// The unknown transaction may also have aborted: then c is not copied,
	// and the offset past it must not be committed.
	if r := checkTxns(input, out("a", "w.0.2", "b", "w.0.2", "d", "w.1.2"), map[int32]int64{0: 4}, history, polls); r.failures() != 1 || r.offsets != 1 {
		t.Errorf("unknown aborted, offset committed past it: %v %v", r, r.details)
	}

	cases := []struct {
		name      string
		output    []*kgo.Record
		committed map[int32]int64
		polls     []txnPoll
		want      func(txnReport) int
	}{
		// w.0.2 committed, b missing: a lost write, and its transaction torn
		// (the offset of b is committed too, so b is an offset inconsistency).
		{"lost", out("a", "w.0.2", "c", "w.1.1", "d", "w.1.2"), map[int32]int64{0: 4}, polls, func(r txnReport) int { return r.lost }},
		{"aborted read", out("a", "w.0.1", "a", "w.0.2", "b", "w.0.2", "c", "w.1.1", "d", "w.1.2"), map[int32]int64{0: 4}, polls, func(r txnReport) int { return r.abortedRead }},
		{"fenced read", out("a", "w.0.2", "b", "w.0.2", "c", "w.0.3", "d", "w.1.2"), map[int32]int64{0: 4}, polls, func(r txnReport) int { return r.abortedRead }},
		{"torn", out("a", "w.0.2", "c", "w.1.1", "d", "w.1.2"), map[int32]int64{0: 4}, polls, func(r txnReport) int { return r.torn }},
		{"duplicate", out("a", "w.0.2", "b", "w.0.2", "c", "w.1.1", "d", "w.1.2", "d", "w.1.2"), map[int32]int64{0: 4}, polls, func(r txnReport) int { return r.duplicate }},
		{"copied past the committed offset", out("a", "w.0.2", "b", "w.0.2", "c", "w.1.1", "d", "w.1.2"), map[int32]int64{0: 3}, polls, func(r txnReport) int { return r.offsets }},
		{"nonmonotonic", out("a", "w.0.2", "b", "w.0.2", "c", "w.1.1", "d", "w.1.2"), map[int32]int64{0: 4}, append(polls, txnPoll{"w", 2, 0, 1, time.Time{}}), func(r txnReport) int { return r.nonmonotonic }},
		{"phantom", out("a", "w.0.2", "b", "w.0.2", "c", "w.1.1", "d", "w.1.2", "x", "w.9.9"), map[int32]int64{0: 4}, polls, func(r txnReport) int { return r.phantom }},
	}
	for _, c := range cases {
		r := checkTxns(input, c.output, c.committed, history, c.polls)
		if c.want(r) != 1 {
			t.Errorf("%s: %v %v", c.name, r, r.details)
		}
	}
}
