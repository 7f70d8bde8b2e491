package e2e

import (
	"strconv"
	"testing"
)

// BenchmarkDedupKeys: what durable idempotence costs on the write path
// (issue 9; seed 003 declined the cost, this measures it). Two facades in
// front of one queen-dev, one pushing each idempotent record with its dedup
// key (the default) and one started with QUEEN_KAFKA_DEDUP_KEYS=false,
// produce the same records (franz-go, acks=all, idempotent, lz4, 1 KiB)
// in alternating rounds, the order flipping each round; the figure is the
// throughput with keys over the throughput without.
func BenchmarkDedupKeys(b *testing.B) {
	const records = benchRecords
	for range b.N {
		dev := startQueenDev(b, devOptions{})
		env := map[string]string{"QUEEN_KAFKA_DEFAULT_PARTITIONS": strconv.Itoa(benchPartitions), "LOG_LEVEL": "warn"}
		keyed := startFacade(b, dev, env)
		env["QUEEN_KAFKA_DEDUP_KEYS"] = "false"
		plain := startFacade(b, dev, env)
		rounds := max(benchRounds, 5)
		var with, without, ratio []float64
		alternate(rounds, func() {
			with = append(with, produceViaFacade(b, []string{keyed.addr}, uniq("bench-dedup"), records))
		}, func() {
			without = append(without, produceViaFacade(b, []string{plain.addr}, uniq("bench-nodedup"), records))
		})
		for i := range with {
			ratio = append(ratio, with[i]/without[i])
		}
		ws, wos, rs := spreadOf(with), spreadOf(without), spreadOf(ratio)
		b.Logf("idempotent produce 1 KiB acks=all lz4, %d records x %d rounds: with dedup keys rec/s min/med/max %s, without %s, ratio with/without min/med/max %.2f/%.2f/%.2f",
			records, rounds, ws, wos, rs.min, rs.med, rs.max)
		reportSpread(b, "with_keys_rec/s", with)
		reportSpread(b, "without_keys_rec/s", without)
		reportSpread(b, "with_over_without", ratio)
	}
}
