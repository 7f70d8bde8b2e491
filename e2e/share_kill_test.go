package e2e

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// shareKillRecords is how many records TestShareConsumersSIGKILL produces
// (half before the workers start, half after the kill), over 4 partitions.
const shareKillRecords = 2000

// shareAck is what a share worker does with a record (its rule, which
// e2e/internal/shareworker applies): REJECT keys ≡ 7 (mod 100) and RELEASE
// keys ≡ 3 (mod 10) on their first delivery, ACCEPT every other delivery.
func shareAck(key int, dc int32) byte {
	switch {
	case dc <= 1 && key%100 == 7:
		return 'J'
	case dc <= 1 && key%10 == 3:
		return 'L'
	}
	return 'A'
}

// shareRecord is one record's history across every worker.
type shareRecord struct {
	key        int
	deliveries []shareDelivery
}

// shareDelivery is one delivery of a record to a worker and what became of
// its acknowledgement: 0 (none printed: the worker still holds it, or was
// killed before its answer), 'C' (answered success) or 'F' (an error).
type shareDelivery struct {
	worker  int
	dc      int32
	ack     byte // the ack the worker sent
	verdict byte
}

type shareTP struct {
	p   int32
	off int64
}

// shareHistory folds every worker's lines into each record's history. An
// ack line belongs to the last delivery of its record to the same worker.
func shareHistory(outs []string) map[shareTP]*shareRecord {
	recs := map[shareTP]*shareRecord{}
	for w, out := range outs {
		for _, l := range parseShareLines(out) {
			tp := shareTP{l.partition, l.offset}
			r := recs[tp]
			if r == nil {
				r = &shareRecord{key: -1}
				recs[tp] = r
			}
			switch l.kind {
			case 'D':
				r.key = l.key
				r.deliveries = append(r.deliveries, shareDelivery{worker: w, dc: l.dc})
			default:
				for i := len(r.deliveries) - 1; i >= 0; i-- {
					if d := &r.deliveries[i]; d.worker == w {
						if d.verdict == 0 {
							d.ack, d.verdict = l.ack, l.kind
						}
						break
					}
				}
			}
		}
	}
	return recs
}

// settled is whether an ACCEPT or REJECT of r was answered success.
func (r *shareRecord) settled() bool {
	for _, d := range r.deliveries {
		if d.verdict == 'C' && (d.ack == 'A' || d.ack == 'J') {
			return true
		}
	}
	return false
}

// inDoubt is whether r's latest delivery went to the killed worker (which
// may have sent its ack before it died) or had its ack answered an error:
// the broker's state decides whether it was acknowledged.
func (r *shareRecord) inDoubt(victim int) bool {
	if len(r.deliveries) == 0 || r.settled() {
		return false
	}
	last := r.deliveries[0]
	for _, d := range r.deliveries {
		if d.dc > last.dc {
			last = d
		}
	}
	return last.worker == victim || last.verdict == 'F'
}

// TestShareConsumersSIGKILL (issue 22): three share-worker processes of
// one share group over one 4-partition topic on a 3-node cluster (each
// bootstrapped at another node), 1 in 10 records RELEASEd once and 1 in 100
// REJECTed; one worker is SIGKILLed while it holds a batch. Then every
// record is ACCEPTed exactly once or archived (REJECTed), never both, none
// is lost, no record is delivered twice under one acquisition (each
// delivery count at most once), nothing is delivered after an answered
// ACCEPT or REJECT, and the share-partition start offsets end at the end
// of every partition (the killed worker's unanswered acks either landed or
// their records were redelivered).
func TestShareConsumersSIGKILL(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, clusterOpts{nodes: 3, env: shareGroupEnv})
	topic := uniq("share-kill")
	c.createTopic(t, topic, shareKillParts)
	runShareKill(t, c.addrs(), func(w int) []string { return c.addrs(w + 1) }, topic)
}

const shareKillParts = 4

// runShareKill is TestShareConsumersSIGKILL against the brokers all, on
// topic (shareKillParts wide), share worker w bootstrapped at seeds(w).
func runShareKill(t *testing.T, all []string, seeds func(w int) []string, topic string) {
	group := uniq("share-kill-group")
	const parts = shareKillParts
	admin := newKgo(t, all)
	setGroupConfigs(t, admin, group, "share.auto.offset.reset", "earliest",
		"share.record.lock.duration.ms", strconv.Itoa(int(shareLock.Milliseconds())))

	produce := func(from, to int) {
		var rs []rec
		for i := from; i < to; i++ {
			rs = append(rs, rec{partition: int32(i % parts), offset: int64(i / parts), key: []byte(strconv.Itoa(i)), value: []byte("v" + strconv.Itoa(i))})
		}
		produceKgo(t, all, topic, kgo.NoCompression(), rs)
	}
	produce(0, shareKillRecords/2)

	const victim = 1
	var workers []*proc
	for w := 0; w < 3; w++ {
		// The victim works slower, so that the kill below, at a delivery,
		// lands while it holds the batch rather than while its acks are on
		// the wire.
		hold := 30 * time.Millisecond
		if w == victim {
			hold = 300 * time.Millisecond
		}
		workers = append(workers, startShareWorker(t, fmt.Sprintf("shareworker-%d", w), seeds(w), group, topic, hold))
	}
	outs := func() []string {
		var o []string
		for _, w := range workers {
			o = append(o, w.Out.String())
		}
		return o
	}

	// Kill the victim once it has had acks answered and has just been
	// handed a batch: its output grew since the last look (every 5 ms) and
	// ends in a delivery, so it is inside its 300 ms of work, before its
	// acks are sent.
	deadline := time.Now().Add(60 * time.Second)
	seen := 0
	for {
		out := workers[victim].Out.String()
		ls := parseShareLines(out)
		acked := 0
		for _, l := range ls {
			if l.kind == 'C' {
				acked++
			}
		}
		fresh := len(out) > seen
		seen = len(out)
		if acked >= 100 && fresh && ls[len(ls)-1].kind == 'D' {
			break
		}
		if !workers[victim].running() || time.Now().After(deadline) {
			t.Fatalf("the victim did not get to hold a batch after 100 answered acks (%d answered, running %v):\n%s", acked, workers[victim].running(), workers[victim].Out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	workers[victim].kill()
	killed := time.Now()
	held := 0
	for _, r := range shareHistory(outs()) {
		for _, d := range r.deliveries {
			if d.worker == victim && d.verdict == 0 {
				held++
			}
		}
	}
	t.Logf("SIGKILLed worker %d holding %d records", victim, held)
	produce(shareKillRecords/2, shareKillRecords)

	// Wait until every record is settled, or in doubt once a lock has had
	// time to expire.
	var recs map[shareTP]*shareRecord
	eventually(t, 2*time.Minute, "every record settled", func() (bool, string) {
		recs = shareHistory(outs())
		pending, doubt := 0, 0
		for p := int32(0); p < parts; p++ {
			for off := int64(0); off < shareKillRecords/parts; off++ {
				r := recs[shareTP{p, off}]
				switch {
				case r == nil:
					pending++
				case r.settled():
				case r.inDoubt(victim):
					doubt++
				default:
					pending++
				}
			}
		}
		done := pending == 0 && (doubt == 0 || time.Since(killed) > shareLock+5*time.Second)
		return done, fmt.Sprintf("%d records pending, %d in doubt", pending, doubt)
	})
	for w, p := range workers {
		if w != victim {
			if code := p.terminate(t, 20*time.Second); code != 0 {
				t.Errorf("shareworker-%d exited %d:\n%s", w, code, p.Out.String())
			}
		}
	}
	recs = shareHistory(outs())

	st, problems := checkShareHistory(recs, parts, shareKillRecords/parts, victim)
	for _, p := range problems {
		t.Error(p)
	}
	t.Logf("%d records: %d ACCEPTed once, %d archived by REJECT, %d acked by the killed worker without an answer; %d RELEASEs answered, %d records delivered more than once",
		shareKillRecords, st.accepted, st.archived, st.doubt, st.released, st.redelivered)
	if st.released == 0 || st.archived == 0 {
		t.Errorf("the run exercised too little: %d RELEASEs, %d REJECTs answered", st.released, st.archived)
	}
	// The killed worker's unanswered acks: landed, or their records were
	// redelivered and settled above. Either way the broker has nothing left
	// to deliver: every share-partition start offset is at the end.
	eventually(t, 20*time.Second, "every SPSO at the end of its partition", func() (bool, string) {
		spso, err := shareStartOffsets(t, admin, group, topic)
		if err != nil {
			return false, err.Error()
		}
		var bad []string
		for p := int32(0); p < parts; p++ {
			if spso[p] != shareKillRecords/parts {
				bad = append(bad, fmt.Sprintf("p%d at %d", p, spso[p]))
			}
		}
		slices.Sort(bad)
		return len(bad) == 0, fmt.Sprintf("want %d everywhere: %s", shareKillRecords/parts, strings.Join(bad, ", "))
	})
}

// shareStats is what checkShareHistory counted.
type shareStats struct {
	accepted, archived, doubt int // records ACCEPTed once, REJECTed once, in doubt
	released, redelivered     int // RELEASEs answered; records delivered more than once
}

// checkShareHistory checks the records of parts partitions of perPart
// records each (key = offset*parts + partition): every record ACCEPTed
// exactly once or REJECTed exactly once (archived), never both, or in doubt
// (its last delivery went to the killed victim); no delivery count twice;
// nothing delivered after an answered ACCEPT or REJECT; every ack the rule
// says. It returns the counts and one sentence per problem.
func checkShareHistory(recs map[shareTP]*shareRecord, parts int32, perPart int64, victim int) (shareStats, []string) {
	var st shareStats
	var problems []string
	fail := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	for p := int32(0); p < parts; p++ {
		for off := int64(0); off < perPart; off++ {
			tp := shareTP{p, off}
			r := recs[tp]
			if r == nil {
				fail("%v: never delivered (lost)", tp)
				continue
			}
			if want := int(off)*int(parts) + int(p); r.key != want {
				fail("%v: key %d, want %d", tp, r.key, want)
			}
			var acceptedBy, rejectedBy []int
			dcs := map[int32]int{}
			var final int32 // the delivery count of the answered ACCEPT or REJECT
			for _, d := range r.deliveries {
				dcs[d.dc]++
				if want := shareAck(r.key, d.dc); d.ack != 0 && d.ack != want {
					fail("%v: worker %d sent %c at delivery %d, its rule says %c", tp, d.worker, d.ack, d.dc, want)
				}
				if d.verdict != 'C' {
					continue
				}
				switch d.ack {
				case 'A':
					acceptedBy = append(acceptedBy, d.worker)
					final = max(final, d.dc)
				case 'J':
					rejectedBy = append(rejectedBy, d.worker)
					final = max(final, d.dc)
				case 'L':
					st.released++
				}
			}
			for dc, n := range dcs {
				if n > 1 {
					fail("%v: delivered %d times at delivery count %d (twice under one acquisition): %+v", tp, n, dc, r.deliveries)
				}
				if final > 0 && dc > final {
					fail("%v: delivered again (count %d) after an answered ACCEPT or REJECT at count %d: %+v", tp, dc, final, r.deliveries)
				}
			}
			if len(dcs) > 1 {
				st.redelivered++
			}
			switch {
			case len(acceptedBy) > 0 && len(rejectedBy) > 0:
				fail("%v: ACCEPTed by %v and REJECTed by %v", tp, acceptedBy, rejectedBy)
			case len(acceptedBy) > 1:
				fail("%v: ACCEPTed %d times (workers %v)", tp, len(acceptedBy), acceptedBy)
			case len(rejectedBy) > 1:
				fail("%v: REJECTed %d times (workers %v)", tp, len(rejectedBy), rejectedBy)
			case len(acceptedBy) == 1:
				st.accepted++
			case len(rejectedBy) == 1:
				st.archived++
			case r.inDoubt(victim):
				st.doubt++
			default:
				fail("%v: neither ACCEPTed nor REJECTed, and not held by the killed worker (lost): %+v", tp, r.deliveries)
			}
		}
	}
	return st, problems
}
