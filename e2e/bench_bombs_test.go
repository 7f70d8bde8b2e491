package e2e

import (
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/recordbatch"
	"github.com/queen-mq/queen-kafka/recordbatch/batchtest"
	"github.com/queen-mq/queen-kafka/transport"
)

const (
	// bombClients is how many connections send a bomb at once.
	bombClients = 12
	bombRounds  = 3
)

// BenchmarkDecompressionBombs: the facade's peak resident set (VmHWM) while
// bombClients connections each send, at once, a small zstd batch whose one
// record decompresses to a maximum frame of zeros, which the facade must
// refuse (issue 20: twelve reached 511 MB; the bound is 384 MB). Reported
// min/median/max over bombRounds rounds of one process, each peak since
// the round began; QK_BENCH_BASELINE_BIN runs another build's facade in the
// same rounds, alternating which goes first.
func BenchmarkDecompressionBombs(b *testing.B) {
	bomb := batchtest.Batch{Codec: recordbatch.CodecZstd, FirstTS: 1, Records: []kmsg.Record{{Value: make([]byte, transport.MaxFrame)}}}.Encode(b)
	for range b.N {
		dev := startQueenDev(b, devOptions{})
		env := map[string]string{"LOG_LEVEL": "warn"}
		fac := startFacade(b, dev, env)
		base := baselineFacade(b, dev, env)
		topic := uniq("bombs")
		if _, err := newAdmin(b, []string{fac.addr}).CreateTopic(ctxT(b, 30*time.Second), 1, -1, nil, topic); err != nil {
			b.Fatal(err)
		}
		var peaks, basePeaks []float64
		for r := range bombRounds {
			if base != nil && r%2 == 1 {
				basePeaks = append(basePeaks, bombRound(b, base, topic, bomb))
			}
			peaks = append(peaks, bombRound(b, fac, topic, bomb))
			if base != nil && r%2 == 0 {
				basePeaks = append(basePeaks, bombRound(b, base, topic, bomb))
			}
		}
		s := spreadOf(peaks)
		b.Logf("%d concurrent zstd bombs of %d bytes (one record of %d MiB of zeros) x %d rounds: facade VmHWM MiB min/med/max %s (issue 20 target <= 384 MB)",
			bombClients, len(bomb), transport.MaxFrame>>20, bombRounds, s)
		if base != nil {
			b.Logf("baseline %s, same rounds: VmHWM MiB %s", os.Getenv("QK_BENCH_BASELINE_BIN"), spreadOf(basePeaks))
		}
		noPanics(b, fac, base)
		b.ReportMetric(s.med, "facade-VmHWM-MiB")
		b.ReportMetric(s.max, "facade-VmHWM-MiB_max")
	}
}

// bombRound sends the bomb from bombClients connections at once to f and
// returns f's peak resident set over the round, in MiB; every bomb must be
// refused MESSAGE_TOO_LARGE.
func bombRound(b *testing.B, f *facade, topic string, bomb []byte) float64 {
	peak := roundPeak(b, f.pid())
	var wg sync.WaitGroup
	errs := make([]error, bombClients)
	for i := range bombClients {
		cl := newKgo(b, []string{f.addr})
		wg.Go(func() {
			resp, err := cl.SeedBrokers()[0].Request(ctxT(b, 2*time.Minute), produceRaw(topic, 0, 30_000, bomb))
			if err != nil {
				errs[i] = err
				return
			}
			if code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.MessageTooLarge.Code {
				errs[i] = fmt.Errorf("bomb %d answered %d, want MESSAGE_TOO_LARGE", i, code)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	return peak()
}
