package e2e

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
)

// Hostile-client and sick-dependency tests (issue 11): each attacks one
// facade process of its own and then proves three things: the process is
// still up, a real client (franz-go) is answered, and, where the attack is
// on memory, the process's peak resident set stayed under the bound the
// README's hardening section states.

// realClientWorks produces a few records with franz-go through seeds and
// reads them back with a consumer group, proving the facade serves.
func realClientWorks(t *testing.T, seeds []string, opts ...kgo.Opt) {
	t.Helper()
	topic, group := uniq("hostile-real"), uniq("hostile-group")
	ctx := ctxT(t, 60*time.Second)
	prod := newKgo(t, seeds, append([]kgo.Opt{kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation()}, opts...)...)
	const n = 5
	for i := range n {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "real-%d", i)}).FirstErr(); err != nil {
			t.Fatalf("real client: produce %d: %v", i, err)
		}
	}
	cons := newKgo(t, seeds, append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumerGroup(group), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	if got := pollKgo(t, cons, n, 30*time.Second); len(got) != n {
		t.Fatalf("real client: consumed %d records, want %d", len(got), n)
	}
}

// mustRun fails t if f's process has exited.
func mustRun(t *testing.T, f *facade, when string) {
	t.Helper()
	if !f.running() {
		t.Fatalf("the facade exited %s (code %d): %v", when, f.exited(), f.ExitErr())
	}
}

// Item 1: a facade out of file descriptors keeps serving. Its soft
// RLIMIT_NOFILE is lowered to a few above what it holds, the listener is
// flooded until accept fails (EMFILE), the flood is closed, and a real
// client is then served by the same process, which never exited. Before
// the fix the first EMFILE ended Serve and the process exited 1 without
// draining.
func TestHostileAcceptOutOfFileDescriptors(t *testing.T) {
	dev, _ := sharedEnv(t)
	fac := startFacade(t, dev, nil)
	seeds := []string{fac.addr}
	realClientWorks(t, seeds) // its HTTP connections to queen-dev are open now

	pid := fac.pid()
	open, err := testsupport.OpenFiles(pid)
	if err != nil {
		t.Fatalf("open files of the facade: %v", err)
	}
	const slack = 32
	soft, hard, err := testsupport.SetOpenFilesLimit(pid, uint64(open+slack))
	if err != nil {
		t.Fatalf("lower RLIMIT_NOFILE: %v", err)
	}
	t.Cleanup(func() { _ = testsupport.RestoreOpenFilesLimit(pid, soft, hard) })
	t.Logf("facade holds %d descriptors; RLIMIT_NOFILE lowered to %d (was %d)", open, open+slack, soft)

	off := fac.Out.Len()
	var flood []net.Conn
	defer func() {
		for _, c := range flood {
			c.Close()
		}
	}()
	// The kernel completes these handshakes into the listen backlog whether
	// or not the process can accept them; past the limit accept fails.
	for range 4 * slack {
		c, err := net.DialTimeout("tcp", fac.addr, 5*time.Second)
		if err != nil {
			break // the backlog is full too
		}
		flood = append(flood, c)
	}
	eventually(t, 20*time.Second, "accept fails with EMFILE", func() (bool, string) {
		return !fac.running() || strings.Contains(fac.Out.From(off), "accept failed"), "no accept failure logged"
	})
	mustRun(t, fac, "on EMFILE")
	for _, c := range flood {
		c.Close()
	}
	flood = nil

	realClientWorks(t, seeds)
	mustRun(t, fac, "after the descriptors came back")
	// The accept failures were logged spaced, not once per retry.
	lines := strings.Count(fac.Out.From(off), "accept failed")
	if lines > 3 {
		t.Errorf("accept failure logged %d times in one episode; want it rate-limited", lines)
	}
}
