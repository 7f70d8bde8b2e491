package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/envelope"
	"github.com/queen-mq/queen-kafka/internal/testsupport"
	"github.com/queen-mq/queen-kafka/producer"
	"github.com/queen-mq/queen-kafka/queen"
)

// BenchmarkProcessPushFacadeShape is queen-dev's side of the produce
// benchmark without the facade: 8 clients push what the facade pushes
// behind an idempotent franz-go producer under load (a producer's request
// per push: 1,400 records of a 1 KiB value in their envelope, about 1.4 KB
// each, over 6 partitions, each record with its counting dedup key), 300
// pushes a round, and it reports the queen-dev process's CPU-seconds per
// million records (from /proc), round by round, then min/median/max.
//
// For an A/B, QK_BENCH_DEV_BINS names the binaries, "name=path,…"; each
// round runs each of them, a fresh process on a fresh directory, in a
// rotating order (default: this test binary as queen-dev). QK_BENCH_ROUNDS
// sets the rounds (3); QK_BENCH_DEV_PROFILE=<dir> writes a CPU profile of
// each process over its round's first QK_BENCH_DEV_PROFILE_SECONDS (15),
// and its allocations since it started at the round's end.
//
//	go test -run '^$' -bench BenchmarkProcessPushFacadeShape -benchtime 1x -v ./cmd/queen-dev/
func BenchmarkProcessPushFacadeShape(b *testing.B) {
	type side struct {
		name, bin string
		args      []string
		cpu       []float64
		rate      []float64
		disk      []float64
	}
	var sides []*side
	if spec := os.Getenv("QK_BENCH_DEV_BINS"); spec != "" {
		for _, kv := range strings.Split(spec, ",") {
			name, path, ok := strings.Cut(kv, "=")
			if !ok {
				b.Fatalf("QK_BENCH_DEV_BINS: %q is not name=path", kv)
			}
			sides = append(sides, &side{name: name, bin: path})
		}
	} else {
		sides = []*side{{name: "this", bin: os.Args[0], args: []string{"-test.run=^$"}}}
	}
	rounds := 3
	if v, err := strconv.Atoi(os.Getenv("QK_BENCH_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	profDir := os.Getenv("QK_BENCH_DEV_PROFILE")
	profSecs := 15
	if v, err := strconv.Atoi(os.Getenv("QK_BENCH_DEV_PROFILE_SECONDS")); err == nil && v > 0 {
		profSecs = v
	}
	for i := 0; i < b.N; i++ {
		for r := range rounds {
			for k := range sides {
				s := sides[(r+k)%len(sides)]
				res := shapeRound(b, s.bin, s.args, profDir, profSecs, fmt.Sprintf("%s-%d-%d", s.name, i, r))
				s.cpu = append(s.cpu, res.cpu)
				s.rate = append(s.rate, res.rate)
				s.disk = append(s.disk, res.disk)
				b.Logf("round %d %s: %.2f CPU-s/M records, %.0f records/s, %.0f MB on disk per M records", r, s.name, res.cpu, res.rate, res.disk)
			}
		}
	}
	for _, s := range sides {
		b.Logf("%s: CPU-s/M %s, records/s %s, MB on disk per M %s", s.name, spread(s.cpu), spread(s.rate), spread(s.disk))
		b.ReportMetric(median(s.cpu), s.name+"-cpu-s/Mrec")
	}
	if len(sides) > 1 {
		for _, s := range sides[1:] {
			ratios := make([]float64, len(s.cpu))
			for i := range ratios {
				ratios[i] = s.cpu[i] / sides[0].cpu[i]
			}
			b.Logf("%s ÷ %s, same round: %s", s.name, sides[0].name, spread(ratios))
		}
	}
}

type shapeResult struct{ cpu, rate, disk float64 }

const (
	shapeClients  = 8
	shapePushes   = 300
	shapeRecords  = 1400
	shapeParts    = 6
	shapeValueLen = 1024
)

// shapeValues are 1 KiB values as the produce benchmark's.
var shapeValues = testsupport.ProduceValues(1024, shapeValueLen, 24)

func shapeRound(b *testing.B, bin string, args []string, profDir string, profSecs int, label string) shapeResult {
	dir := b.TempDir()
	env := append(testsupport.BaseEnv(), "QUEEN_DEV_ADDR=127.0.0.1:0", "QUEEN_DEV_DATA="+dir)
	if len(args) > 0 {
		env = append(env, "QUEEN_DEV_TEST_MAIN=1")
	}
	if profDir != "" {
		env = append(env, "QUEEN_DEV_PPROF_ADDR=127.0.0.1:0")
	}
	p := &testsupport.Proc{Name: "queen-dev " + label, Bin: bin, Args: args, Env: env}
	if err := p.Start(); err != nil {
		b.Fatal(err)
	}
	defer p.Kill()
	l, err := p.WaitLine(func(l string) bool { return addrRE.MatchString(l) && strings.Contains(l, "listening") }, 20*time.Second)
	if err != nil {
		b.Fatalf("queen-dev did not boot: %v\n%s", err, p.Out.String())
	}
	url := "http://" + addrRE.FindStringSubmatch(l)[1]
	qc, err := queen.New(queen.Config{URL: url, RequestTimeout: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	// The queue exists before the round (the facade's first push of a
	// topic creates it).
	if _, err := qc.Push(ctx, []queen.PushItem{{Queue: "shape", Partition: "0", Payload: []byte(`{}`)}}); err != nil {
		b.Fatal(err)
	}
	var profWG sync.WaitGroup
	var profAddr string
	save := func(path, file string) {
		resp, err := http.Get("http://" + profAddr + path)
		if err != nil {
			b.Error(err)
			return
		}
		defer resp.Body.Close()
		f, err := os.Create(filepath.Join(profDir, file))
		if err != nil {
			b.Error(err)
			return
		}
		defer f.Close()
		_, _ = io.Copy(f, resp.Body)
	}
	if profDir != "" {
		pl, err := p.WaitLine(pprofRE.MatchString, 10*time.Second)
		if err != nil {
			b.Fatalf("no profile listener logged: %v\n%s", err, p.Out.String())
		}
		profAddr = pprofRE.FindStringSubmatch(pl)[1]
		profWG.Add(1)
		go func() {
			defer profWG.Done()
			save(fmt.Sprintf("/debug/pprof/profile?seconds=%d", profSecs), label+".pprof")
		}()
	}
	cpu0, _ := testsupport.ProcCPU(p.Pid())
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for c := range shapeClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pid := int64(1000 + c)
			var seq [shapeParts]int32
			n := c * 7919
			items := make([]queen.PushItem, shapeRecords)
			for next.Add(1) <= shapePushes {
				now := time.Now().UnixMilli()
				per := (shapeRecords + shapeParts - 1) / shapeParts
				for from, part := 0, 0; from < shapeRecords; from, part = from+per, part+1 {
					to := min(from+per, shapeRecords)
					keys := producer.DedupKeys(pid, 0, seq[part], to-from)
					seq[part] += int32(to - from)
					ps := strconv.Itoa(part)
					for j := from; j < to; j++ {
						rec := envelope.Record{Value: shapeValues[n%len(shapeValues)], Timestamp: now}
						n++
						items[j] = queen.PushItem{Queue: "shape", Partition: ps, Payload: envelope.Append(items[j].Payload[:0], &rec), TransactionID: keys[j-from]}
					}
				}
				if _, err := qc.Push(ctx, items); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	cpu1, _ := testsupport.ProcCPU(p.Pid())
	if profDir != "" {
		save("/debug/pprof/allocs", label+".allocs")
	}
	profWG.Wait()
	recs := float64(shapePushes * shapeRecords)
	return shapeResult{
		cpu:  (cpu1 - cpu0).Seconds() / recs * 1e6,
		rate: recs / el.Seconds(),
		disk: float64(testsupport.DirBytes(dir)) / 1e6 / recs * 1e6,
	}
}

var pprofRE = regexp.MustCompile(`profiles served.*addr=(127\.0\.0\.1:\d+)`)

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

func spread(xs []float64) string {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f / %.2f / %.2f", s[0], s[len(s)/2], s[len(s)-1])
}
