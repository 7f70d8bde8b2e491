package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
)

// kcatBin is the kcat executable; the suite fails rather than skips without
// it (.ci/run installs the Debian package).
func kcatBin(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatalf("kcat not installed (apt-get install -y kcat): %v", err)
	}
	return p
}

// runKcat runs kcat to completion with stdin and a deadline.
func runKcat(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	out, stderr, err := execKcat(t, stdin, args...)
	if err != nil {
		t.Fatalf("kcat %v: %v\nstdout:\n%s\nstderr:\n%s", args, err, out, stderr)
	}
	return out
}

// execKcat runs kcat to completion with stdin, and returns its output and
// how it ended; one still running after 20 s is killed and its error wraps
// context.DeadlineExceeded.
func execKcat(t testing.TB, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcatBin(t), args...)
	cmd.Stdin = strings.NewReader(stdin)
	var eb strings.Builder
	cmd.Stderr = &eb
	out, err := cmd.Output()
	if ctx.Err() != nil {
		err = fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	return string(out), eb.String(), err
}

// kcatProc is a long-running kcat (a group consumer) whose output lines are
// collected as they arrive.
type kcatProc struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  []string
	errb testsupport.LogBuffer
	done chan struct{}
}

func startKcat(t testing.TB, args ...string) *kcatProc {
	t.Helper()
	k := &kcatProc{cmd: exec.Command(kcatBin(t), args...), done: make(chan struct{})}
	testsupport.KillWithParent(k.cmd)
	stdout, err := k.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	k.cmd.Stderr = &k.errb
	if err := k.cmd.Start(); err != nil {
		t.Fatalf("kcat %v: %v", args, err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			k.mu.Lock()
			k.out = append(k.out, sc.Text())
			k.mu.Unlock()
		}
		_ = k.cmd.Wait()
		close(k.done)
	}()
	t.Cleanup(func() {
		k.kill()
		if t.Failed() {
			t.Logf("kcat %v stdout %q\nstderr:\n%s", args, k.lines(), k.stderr())
		}
	})
	return k
}

func (k *kcatProc) lines() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.out...)
}

func (k *kcatProc) stderr() string { return k.errb.From(0) }

// waitLines waits for at least n output lines.
func (k *kcatProc) waitLines(t testing.TB, n int, limit time.Duration) []string {
	t.Helper()
	var ls []string
	eventually(t, limit, fmt.Sprintf("kcat printed %d lines", n), func() (bool, string) {
		ls = k.lines()
		return len(ls) >= n, fmt.Sprintf("%q; stderr %s", ls, k.stderr())
	})
	return ls
}

// interrupt stops kcat the way Ctrl-C does, so it commits and leaves.
func (k *kcatProc) interrupt() {
	_ = k.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-k.done:
	case <-time.After(10 * time.Second):
		k.kill()
	}
}

func (k *kcatProc) kill() {
	_ = k.cmd.Process.Kill()
	<-k.done
}

// TestKcatWalkthrough is seed 003's "Try it", step by step, against a fresh
// queen-dev and a facade at the documented default width (1,024), so the
// partition numbers are the page's own: customer-123 lands on 307 and
// customer-456 on 400.
func TestKcatWalkthrough(t *testing.T) {
	t.Parallel()
	dev := startQueenDev(t, devOptions{})
	fac := startFacade(t, dev, map[string]string{"QUEEN_KAFKA_DEFAULT_PARTITIONS": ""})
	b := fac.addr

	runKcat(t, "customer-123:{\"orderId\":8891,\"total\":42}\ncustomer-456:{\"orderId\":8892,\"total\":17}\ncustomer-123:{\"orderId\":8893,\"total\":5}\n",
		"-P", "-b", b, "-t", "orders", "-K:")
	out := runKcat(t, "", "-C", "-b", b, "-t", "orders", "-o", "beginning", "-e", "-q", "-f", "%t [%p] offset %o key=%k %s\n")
	want := []string{
		`orders [307] offset 0 key=customer-123 {"orderId":8891,"total":42}`,
		`orders [307] offset 1 key=customer-123 {"orderId":8893,"total":5}`,
		`orders [400] offset 0 key=customer-456 {"orderId":8892,"total":17}`,
	}
	assertLines(t, "kcat -C", out, want)

	// Metadata: the auto-created width is the documented default.
	md := runKcat(t, "", "-L", "-b", b, "-t", "orders")
	if !strings.Contains(md, `topic "orders" with 1024 partitions`) {
		t.Errorf("kcat -L:\n%s\nwant orders with 1024 partitions", md)
	}

	// The fetch route sees the same records as envelopes.
	res := dev.fetch(t, "orders", "307", 0)
	if len(res.Records) != 2 {
		t.Fatalf("fetch route orders[307]: %d records, want 2", len(res.Records))
	}
	for i, doc := range []string{`{"orderId":8891,"total":42}`, `{"orderId":8893,"total":5}`} {
		e := decodeEnvelope(t, res.Records[i].Payload)
		if strp(e.K) != strp(b64([]byte("customer-123"))) || strp(e.V) != strp(b64([]byte(doc))) || e.T == nil {
			t.Errorf("orders[307]@%d envelope %s, want k=customer-123 v=%s with t", i, res.Records[i].Payload, doc)
		}
	}

	// Group consumption: billing reads all three, then commits on Ctrl-C.
	k := startKcat(t, "-b", b, "-G", "billing", "-o", "beginning", "-q", "-u", "-f", "billing [%p] offset %o key=%k\n", "orders")
	k.waitLines(t, 3, 30*time.Second)
	time.Sleep(200 * time.Millisecond)
	k.interrupt()
	assertLines(t, "kcat -G billing", strings.Join(k.lines(), "\n"), []string{
		"billing [307] offset 0 key=customer-123",
		"billing [307] offset 1 key=customer-123",
		"billing [400] offset 0 key=customer-456",
	})
	tg := target{bootstrap: []string{b}, dev: dev}
	assertCommitted(t, tg, "billing", "orders", map[int32]int64{307: 2, 400: 1})

	// A native push is read by kcat at its offset, as no key and the JSON text.
	offs := dev.push(t, pushItem{Queue: "orders", Partition: "307", Payload: json.RawMessage(`{"orderId":8894,"total":99}`)})
	if offs[0] != 2 {
		t.Fatalf("native push landed at offset %d, want 2", offs[0])
	}
	out = runKcat(t, "", "-C", "-b", b, "-t", "orders", "-p", "307", "-o", "2", "-c", "1", "-q", "-f", "offset %o key=%k value=%s\n")
	assertLines(t, "kcat -p 307 -o 2", out, []string{`offset 2 key= value={"orderId":8894,"total":99}`})
}

// assertLines compares output lines to want, order-insensitively across
// partitions but keeping each partition's order (the page's own output is
// sorted by partition only by coincidence of timing).
func assertLines(t testing.TB, what, out string, want []string) {
	t.Helper()
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l != "" {
			got = append(got, l)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%s printed %d lines, want %d:\n%s", what, len(got), len(want), out)
		return
	}
	seen := map[string]int{}
	for _, g := range got {
		seen[g]++
	}
	for _, w := range want {
		if seen[w] != 1 {
			t.Errorf("%s: line %q printed %d times; output:\n%s", what, w, seen[w], out)
		}
	}
	// Per-partition order: the 307 lines in offset order.
	var order []string
	for _, g := range got {
		if strings.Contains(g, "[307]") {
			order = append(order, g)
		}
	}
	for i := 1; i < len(order); i++ {
		if order[i] < order[i-1] {
			t.Errorf("%s: partition 307 out of order: %q", what, order)
		}
	}
}

// testKcatCodecs: librdkafka (kcat) produces keyed records with headers
// under each codec it can use against this facade, and both kcat and
// franz-go read them back exactly.
func testKcatCodecs(t *testing.T, tg target) {
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		t.Run(codec, func(t *testing.T) {
			t.Parallel()
			topic := uniq("kcat-" + codec)
			createTopic(t, tg, topic, 1, nil)
			var in strings.Builder
			var want []rec
			for i := 0; i < 5; i++ {
				k, v := fmt.Sprintf("key-%d", i), fmt.Sprintf(`{"n":%d,"pad":"%s"}`, i, strings.Repeat("x", 40))
				fmt.Fprintf(&in, "%s:%s\n", k, v)
				want = append(want, rec{offset: int64(i), key: []byte(k), value: []byte(v),
					headers: []hdr{{"a", []byte("1")}, {"b", []byte("two")}, {"a", []byte("3")}}})
			}
			runKcat(t, in.String(), "-P", "-b", tg.bootstrap[0], "-t", topic, "-p", "0", "-K:", "-z", codec,
				"-H", "a=1", "-H", "b=two", "-H", "a=3", "-X", "enable.idempotence=true")
			assertRecords(t, "franz-go read of kcat/"+codec, want, consumeKgo(t, tg.bootstrap, topic, 1, len(want)), recOpts{nullVsEmpty: true})
			out := runKcat(t, "", "-C", "-b", tg.bootstrap[0], "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q", "-f", "%o %k %s %h\n")
			var lines []string
			for _, w := range want {
				lines = append(lines, fmt.Sprintf("%d %s %s a=1,b=two,a=3", w.offset, w.key, w.value))
			}
			assertLines(t, "kcat -C of kcat/"+codec, out, lines)
		})
	}
}
