package e2e

import (
	"maps"
	"slices"
	"testing"
	"time"
)

// BenchmarkRebalance848VsClassic (issue 21): the six-member change of
// TestConsumerProtocolSixMembers (one member added, one removed, the static
// member restarted; 24 partitions under a producer of about 500 records/s)
// with the classic protocol (franz-go's cooperative-sticky) and with the
// consumer protocol (KIP-848, the facade's uniform assignor), alternating,
// benchRounds rounds each, on one facade. For each it reports, min/median/
// max over the rounds: the change's length (first step begun → the
// members' callbacks show an even covering assignment after the last), the
// records the members processed during it, and the pause each member that
// lived through the whole change saw (its longest stretch without
// processing a record inside the change), next to the same longest stretch
// in two seconds of steady consumption before it. Figures, not assertions.
func BenchmarkRebalance848VsClassic(b *testing.B) {
	dev := startQueenDev(b, devOptions{})
	fac := startFacade(b, dev, withEnv(consumerGroupEnv, map[string]string{"LOG_LEVEL": "warn"}))
	seeds := []string{fac.addr}
	require848(b, seeds)
	type figures struct{ change, records, pause, steady []float64 }
	res := map[groupProto]*figures{protoClassic: {}, protoConsumer: {}}
	for r := 0; r < benchRounds*b.N; r++ {
		for _, proto := range []groupProto{protoClassic, protoConsumer} {
			f := res[proto]
			topic, group := uniq("rb-"+string(proto)), uniq("rb-group")
			createTopic(b, target{bootstrap: seeds}, topic, changeParts, nil)
			tl := newOwnership()
			prod := startSteadyProducer(b, seeds, topic, changeParts, 2*time.Millisecond)
			run := groupChange(b, seeds, proto, topic, group, tl)
			prod.finish(b)
			for _, m := range run.live {
				m.close()
			}
			f.change = append(f.change, run.change[1].Sub(run.change[0]).Seconds())
			n := 0
			for _, m := range run.all {
				for _, c := range m.records() {
					if !c.at.Before(run.change[0]) && !c.at.After(run.change[1]) {
						n++
					}
				}
			}
			f.records = append(f.records, float64(n))
			// The members that lived through the whole change: m1, m3, m4, m5.
			for _, m := range run.all {
				if !slices.Contains([]string{"m1", "m3", "m4", "m5"}, m.name) {
					continue
				}
				f.pause = append(f.pause, longestGap(m.records(), run.change).Seconds()*1000)
				f.steady = append(f.steady, longestGap(m.records(), run.steady).Seconds()*1000)
			}
			tl.mu.Lock()
			if len(tl.violations) > 0 || len(tl.lost) > 0 {
				b.Logf("%s round %d: %d partitions owned twice, %d lost", proto, r, len(tl.violations), len(tl.lost))
			}
			tl.mu.Unlock()
		}
	}
	for _, proto := range []groupProto{protoClassic, protoConsumer} {
		f := res[proto]
		c, n, p, s := spreadOf(f.change), spreadOf(f.records), spreadOf(f.pause), spreadOf(f.steady)
		b.Logf("%-8s %d rounds (min/med/max): change %.2f/%.2f/%.2f s, %s records processed during it, each lasting member's longest pause %s ms (steady: %s ms)",
			proto, len(f.change), c.min, c.med, c.max, n, p, s)
		b.ReportMetric(p.med, string(proto)+"-pause-ms-median")
		b.ReportMetric(n.med, string(proto)+"-records-median")
	}
}

// longestGap is the longest stretch inside window in which none of cs was
// processed, the window's edges counting as the stretch's ends.
func longestGap(cs []consumed, window [2]time.Time) time.Duration {
	last, gap := window[0], time.Duration(0)
	for _, c := range cs {
		if c.at.Before(window[0]) || c.at.After(window[1]) {
			continue
		}
		gap = max(gap, c.at.Sub(last))
		last = c.at
	}
	return max(gap, window[1].Sub(last))
}

// withEnv is base with extra's entries added.
func withEnv(base, extra map[string]string) map[string]string {
	out := map[string]string{}
	maps.Copy(out, base)
	maps.Copy(out, extra)
	return out
}
