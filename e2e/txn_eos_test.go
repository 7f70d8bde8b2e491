package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
)

// The exactly-once worker is this test binary run again with eosWorkerEnv
// set: init runs it before the test framework (and TestMain's builds) start,
// so the worker is a real process the test can kill -9 mid-transaction.
const eosWorkerEnv = "QK_E2E_EOS_WORKER"

func init() {
	if os.Getenv(eosWorkerEnv) != "" {
		os.Exit(runEOSWorker())
	}
}

// eosWorker is what the test tells one worker process, by environment.
type eosWorker struct {
	name, bootstrap, in, out, group, txnID string
	// rdkafka: librdkafka's loop (runRdkafkaEOSWorker) instead of
	// franz-go's GroupTransactSession.
	rdkafka bool
	// hangAfter > 0: once this many records are committed, the next
	// transaction stages its records on the facade, prints "HANG" and
	// blocks with the transaction open and its offsets uncommitted: the
	// point at which the test kills it.
	hangAfter int
}

func (w eosWorker) env() map[string]string {
	return map[string]string{
		eosWorkerEnv: w.name, "QK_EOS_BOOTSTRAP": w.bootstrap, "QK_EOS_IN": w.in, "QK_EOS_OUT": w.out,
		"QK_EOS_GROUP": w.group, "QK_EOS_TXN_ID": w.txnID, "QK_EOS_HANG_AFTER": strconv.Itoa(w.hangAfter),
		"QK_EOS_RDKAFKA": strconv.FormatBool(w.rdkafka),
	}
}

// runEOSWorker is franz-go's consume-transform-produce loop: a
// GroupTransactSession copies each input record to the same partition of
// the output topic, its offsets committed in the same transaction.
func runEOSWorker() int {
	w := eosWorker{
		name: os.Getenv(eosWorkerEnv), bootstrap: os.Getenv("QK_EOS_BOOTSTRAP"), in: os.Getenv("QK_EOS_IN"),
		out: os.Getenv("QK_EOS_OUT"), group: os.Getenv("QK_EOS_GROUP"), txnID: os.Getenv("QK_EOS_TXN_ID"),
	}
	w.hangAfter, _ = strconv.Atoi(os.Getenv("QK_EOS_HANG_AFTER"))
	w.rdkafka, _ = strconv.ParseBool(os.Getenv("QK_EOS_RDKAFKA"))
	say := func(format string, args ...any) {
		fmt.Printf("eos %s: "+format+"\n", append([]any{w.name}, args...)...)
	}
	if w.rdkafka {
		return runRdkafkaEOSWorker(w, say)
	}
	sess, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(w.bootstrap),
		kgo.TransactionalID(w.txnID),
		kgo.TransactionTimeout(30*time.Second),
		kgo.ConsumerGroup(w.group), kgo.ConsumeTopics(w.in),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.SessionTimeout(2*time.Second), kgo.HeartbeatInterval(300*time.Millisecond),
		kgo.RebalanceTimeout(5*time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.FetchMaxWait(250*time.Millisecond), kgo.MetadataMinAge(250*time.Millisecond),
		kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelInfo, nil)),
	)
	if err != nil {
		say("FATAL session: %v", err)
		return 1
	}
	bg := context.Background()
	copied := 0
	for {
		ctx, cancel := context.WithTimeout(bg, 2*time.Second)
		fs := sess.PollRecords(ctx, 40)
		cancel()
		if fs.IsClientClosed() {
			return 1
		}
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				say("fetch %s[%d]: %v", topic, p, err)
			}
		})
		n := fs.NumRecords()
		if n == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			say("FATAL begin: %v", err)
			return 1
		}
		fs.EachRecord(func(r *kgo.Record) {
			out := &kgo.Record{Topic: w.out, Partition: r.Partition, Key: r.Key, Value: r.Value,
				Headers: []kgo.RecordHeader{{Key: "worker", Value: []byte(w.name)}}}
			sess.Produce(bg, out, func(_ *kgo.Record, err error) {
				if err != nil {
					say("produce: %v", err)
				}
			})
		})
		if w.hangAfter > 0 && copied >= w.hangAfter {
			if err := sess.Client().Flush(bg); err != nil {
				say("FATAL flush: %v", err)
				return 1
			}
			say("HANG with %d records staged after %d committed", n, copied)
			select {}
		}
		committed, err := sess.End(bg, kgo.TryCommit)
		switch {
		case err != nil:
			say("FATAL end: %v", err)
			return 1
		case committed:
			copied += n
			say("committed %d", copied)
		default:
			say("aborted %d (rebalance)", n)
		}
	}
}

// startEOSWorker starts w as a child process, killed when t ends.
func startEOSWorker(t *testing.T, w eosWorker) *testsupport.Proc {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	p := &testsupport.Proc{Name: "eos-worker-" + w.name, Bin: exe, Env: testsupport.EnvList(w.env()), Out: &testsupport.LogBuffer{}}
	p.AttachLogs(t)
	t.Cleanup(p.Kill)
	require.NoError(t, p.Start())
	return p
}

// TestTxnGroupTransactSessionKillRestart: franz-go's GroupTransactSession
// copies 2,000 records over 6 partitions from an input topic to an output
// topic, and its process is killed with SIGKILL twice, each time holding an
// open transaction whose records are staged and whose offsets are not yet
// committed. The next worker takes the same transactional id, which fences
// the dead one and aborts its stage, rejoins the group once the dead
// member's session expires, and resumes from the committed offsets. In the
// end every input record is in the output exactly once, in its input
// partition and order, and the group's committed offsets are the input's
// end offsets.
func TestTxnGroupTransactSessionKillRestart(t *testing.T) {
	t.Parallel()
	dev, _ := sharedEnv(t)
	fac := startFacade(t, dev, map[string]string{"QUEEN_KAFKA_GROUP_MIN_SESSION_TIMEOUT_MS": "1000"})
	seeds := []string{fac.addr}
	tg := target{seeds, dev}
	const parts, n = 6, 2000
	in, out := uniq("eos-in"), uniq("eos-out")
	createTopic(t, tg, in, parts, nil)
	createTopic(t, tg, out, parts, nil)

	input, want := eosInput(in, parts, n)
	prod := newKgo(t, seeds, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, prod.ProduceSync(ctxT(t, 60*time.Second), input...).FirstErr())
	inEnds := endOffsets(t, seeds, in)
	require.Equal(t, int64(n), sumOffsets(inEnds))

	w := eosWorker{bootstrap: fac.addr, in: in, out: out, group: uniq("g-eos"), txnID: uniq("tid-eos")}
	for i, hang := range []int{500, 600} {
		w.name, w.hangAfter = fmt.Sprintf("w%d", i+1), hang
		p := startEOSWorker(t, w)
		line, err := p.WaitLine(func(l string) bool { return strings.Contains(l, "HANG") }, 60*time.Second)
		require.NoError(t, err, "worker %s holding an open transaction", w.name)
		p.Kill()
		t.Logf("killed -9: %s", line)
	}
	w.name, w.hangAfter = "w3", 0
	last := startEOSWorker(t, w)

	// Done when the group has committed the whole input; each commit
	// carries its records, so the output is then complete too.
	waitCommitted(t, tg, w.group, in, inEnds, 90*time.Second)
	require.True(t, last.Running(), "the last worker exited: %v", last.ExitErr())
	last.Kill()

	assertCopiedOnce(t, seeds, out, inEnds, want, n)
}
