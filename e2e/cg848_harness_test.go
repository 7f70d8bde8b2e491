package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The harness of the KIP-848 group tests and benchmark (issue 21): franz-go
// members whose own assigned/revoked/lost callbacks feed one shared
// ownership timeline, a steady producer, a committed-offset monitor and
// the delivery checks.

// groupProto is the protocol a member joins its group with.
type groupProto string

const (
	// protoConsumer is KIP-848: franz-go's ServerSideBalancer, which takes
	// the consumer protocol only with the sticky or range balancer first
	// (sticky asks the broker for its "uniform" assignor) and silently
	// falls back to the classic protocol on a broker without key 68 v1.
	protoConsumer groupProto = "consumer"
	// protoClassic is the classic protocol with cooperative-sticky, the
	// incremental classic rebalance to compare against.
	protoClassic groupProto = "classic"
)

// ownership is who owns which partition, from the members' callbacks: a
// member owns a partition from the start of its OnPartitionsAssigned until
// its OnPartitionsRevoked or OnPartitionsLost returns (or, with neither,
// until its client is closed). A partition assigned to a member while
// another still owns it is a violation: KIP-848's revocation before
// reassignment says it never happens.
type ownership struct {
	mu         sync.Mutex
	start      time.Time
	owner      map[int32]string
	events     []string
	violations []string
	lost       []string
}

func newOwnership() *ownership {
	return &ownership{start: time.Now(), owner: map[int32]string{}}
}

func (o *ownership) logf(format string, args ...any) {
	o.events = append(o.events, fmt.Sprintf("%8.3fs ", time.Since(o.start).Seconds())+fmt.Sprintf(format, args...))
}

func (o *ownership) assigned(who string, ps []int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(ps) == 0 {
		return
	}
	o.logf("%s assigned %v", who, ps)
	for _, p := range ps {
		if cur, ok := o.owner[p]; ok && cur != who {
			v := fmt.Sprintf("partition %d assigned to %s at %.3fs while %s still owned it (its revoke had not returned)", p, who, time.Since(o.start).Seconds(), cur)
			o.violations = append(o.violations, v)
			o.logf("VIOLATION: %s", v)
		}
		o.owner[p] = who
	}
}

// released ends who's ownership of ps; how is "revoked", "lost" or
// "closed".
func (o *ownership) released(who, how string, ps []int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(ps) == 0 {
		return
	}
	o.logf("%s %s %v", who, how, ps)
	if how == "lost" {
		o.lost = append(o.lost, fmt.Sprintf("%s lost %v at %.3fs", who, ps, time.Since(o.start).Seconds()))
	}
	for _, p := range ps {
		if o.owner[p] == who {
			delete(o.owner, p)
		}
	}
}

// held is what who owns now, ascending.
func (o *ownership) held(who string) []int32 {
	o.mu.Lock()
	defer o.mu.Unlock()
	var ps []int32
	for p, w := range o.owner {
		if w == who {
			ps = append(ps, p)
		}
	}
	slices.Sort(ps)
	return ps
}

func (o *ownership) snapshot() map[int32]string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.owner)
}

// waitBalanced waits until live together own every one of parts
// partitions, each at least parts/len(live) of them (an even spread, as
// uniform, range and cooperative-sticky all make it), and returns when.
func (o *ownership) waitBalanced(t testing.TB, parts int32, live []*gm, limit time.Duration) time.Time {
	t.Helper()
	names := map[string]bool{}
	for _, m := range live {
		names[m.name] = true
	}
	eventually(t, limit, fmt.Sprintf("%d members owning all %d partitions evenly", len(live), parts), func() (bool, string) {
		snap := o.snapshot()
		count := map[string]int{}
		for _, w := range snap {
			count[w]++
		}
		for w := range count {
			if !names[w] {
				return false, fmt.Sprintf("%s (not a live member) still owns partitions: %v", w, count)
			}
		}
		for _, m := range live {
			if count[m.name] < int(parts)/len(live) {
				return false, fmt.Sprintf("%s owns %d: %v", m.name, count[m.name], count)
			}
		}
		return int32(len(snap)) == parts, fmt.Sprintf("%d of %d owned: %v", len(snap), parts, count)
	})
	return time.Now()
}

// report fails t on any violation or lost partition and, when t failed,
// logs the whole timeline.
func (o *ownership) report(t testing.TB) {
	t.Helper()
	for _, p := range o.problems() {
		t.Error(p)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if t.Failed() {
		t.Logf("ownership timeline:\n%s", strings.Join(o.events, "\n"))
	}
}

// problems is every violation and lost partition so far.
func (o *ownership) problems() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for _, v := range o.violations {
		out = append(out, "owned twice: "+v)
	}
	for _, l := range o.lost {
		out = append(out, "OnPartitionsLost in a run with no fault: "+l)
	}
	return out
}

// consumed is one record as a member processed it.
type consumed struct {
	partition int32
	offset    int64
	value     string
	at        time.Time
}

// gm is one group member: a franz-go client polling in the background,
// which blocks rebalances while it holds a poll and commits everything it
// processed before allowing the next, so a revocation never finds a
// processed record uncommitted unless its commit failed.
type gm struct {
	name    string
	tl      *ownership
	cl      *kgo.Client
	started time.Time

	mu          sync.Mutex
	firstAssign time.Duration // from started to the first non-empty assignment; 0 until then
	got         []consumed
	committed   map[int32]int64 // the next offset this member committed successfully
	commitErrs  []string

	stop chan struct{}
	done chan struct{}
}

type gmOpts struct {
	proto    groupProto
	instance string // group.instance.id: a static member
	extra    []kgo.Opt
}

func startGM(t testing.TB, tl *ownership, seeds []string, name, group, topic string, o gmOpts) *gm {
	t.Helper()
	m := &gm{name: name, tl: tl, committed: map[int32]int64{}, stop: make(chan struct{}), done: make(chan struct{})}
	release := func(how string) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			ps := slices.Clone(a[topic])
			slices.Sort(ps)
			tl.released(name, how, ps)
		}
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ClientID("e2e-" + name),
		kgo.FetchMaxWait(250 * time.Millisecond),
		kgo.MetadataMinAge(250 * time.Millisecond),
		kgo.RetryTimeout(60 * time.Second),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			ps := slices.Clone(a[topic])
			slices.Sort(ps)
			tl.assigned(name, ps)
			m.mu.Lock()
			if m.firstAssign == 0 && len(ps) > 0 {
				m.firstAssign = time.Since(m.started)
			}
			m.mu.Unlock()
		}),
		kgo.OnPartitionsRevoked(release("revoked")),
		kgo.OnPartitionsLost(release("lost")),
	}
	switch o.proto {
	case protoConsumer:
		opts = append(opts, kgo.ServerSideBalancer(), kgo.Balancers(kgo.StickyBalancer()))
	case protoClassic:
		opts = append(opts, kgo.Balancers(kgo.CooperativeStickyBalancer()),
			kgo.SessionTimeout(10*time.Second), kgo.HeartbeatInterval(time.Second))
	default:
		t.Fatalf("unknown protocol %q", o.proto)
	}
	if o.instance != "" {
		opts = append(opts, kgo.InstanceID(o.instance))
	}
	m.started = time.Now()
	cl, err := kgo.NewClient(append(opts, o.extra...)...)
	if err != nil {
		t.Fatalf("member %s: %v", name, err)
	}
	m.cl = cl
	go m.loop()
	t.Cleanup(m.close)
	return m
}

func (m *gm) loop() {
	defer close(m.done)
	for {
		if closed(m.stop) {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		fs := m.cl.PollFetches(ctx)
		cancel()
		if fs.IsClientClosed() {
			return
		}
		now := time.Now()
		var recs []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) { recs = append(recs, r) })
		m.mu.Lock()
		for _, r := range recs {
			m.got = append(m.got, consumed{r.Partition, r.Offset, string(r.Value), now})
		}
		m.mu.Unlock()
		if len(recs) > 0 {
			cctx, ccancel := context.WithTimeout(context.Background(), 15*time.Second)
			err := m.cl.CommitRecords(cctx, recs...)
			ccancel()
			m.mu.Lock()
			if err != nil {
				m.commitErrs = append(m.commitErrs, err.Error())
			} else {
				for _, r := range recs {
					if r.Offset+1 > m.committed[r.Partition] {
						m.committed[r.Partition] = r.Offset + 1
					}
				}
			}
			m.mu.Unlock()
		}
		m.cl.AllowRebalance()
	}
}

// close stops the poll loop and closes the client (a dynamic member leaves
// the group, a static one leaves temporarily); whatever no callback
// released is released now: a closed client consumes nothing.
func (m *gm) close() {
	if closed(m.stop) {
		return
	}
	close(m.stop)
	m.cl.AllowRebalance()
	<-m.done
	m.cl.Close()
	m.tl.released(m.name, "closed", m.tl.held(m.name))
}

// closeStatic closes a static member as a restart does: its client
// closes, and the group is told it left temporarily (epoch -2 with its
// instance id), so that a new client with the instance id takes over its
// member and assignment. franz-go v1.22.3 sends that leave itself but
// without the instance id, which Kafka answers INVALID_REQUEST ("InstanceId
// can't be null.", GroupMetadataManager's request validation), as the
// facade does: the member stays, and a restart is refused
// UNRELEASED_INSTANCE_ID until the session timeout (45 s) removes it. So
// the leave a correct client sends is sent here on its behalf.
func (m *gm) closeStatic(t testing.TB, seeds []string, group, instance string) {
	t.Helper()
	member, _ := m.cl.GroupMetadata()
	m.close()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch, req.InstanceID = group, member, -2, &instance
	resp, err := req.RequestWith(ctxT(t, 15*time.Second), newKgo(t, seeds))
	if err != nil {
		t.Fatalf("static member %s's temporary leave: %v", m.name, err)
	}
	if resp.ErrorCode != 0 {
		t.Fatalf("static member %s's temporary leave (member %s, instance %s, epoch -2): %v", m.name, member, instance, kerr.ErrorForCode(resp.ErrorCode))
	}
}

func (m *gm) records() []consumed {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.got)
}

func (m *gm) joinToAssigned() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.firstAssign
}

// steadyProducer writes one record every tick, round-robin over the
// partitions, acknowledged records kept in acks.
type steadyProducer struct {
	cl   *kgo.Client
	acks *ackLog
	stop chan struct{}
	done chan struct{}
}

func startSteadyProducer(t testing.TB, seeds []string, topic string, parts int32, tick time.Duration) *steadyProducer {
	t.Helper()
	p := &steadyProducer{acks: &ackLog{}, stop: make(chan struct{}), done: make(chan struct{})}
	p.cl = newKgo(t, seeds, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RetryTimeout(60*time.Second), kgo.ProducerLinger(5*time.Millisecond))
	go func() {
		defer close(p.done)
		tk := time.NewTicker(tick)
		defer tk.Stop()
		for i := 0; ; i++ {
			select {
			case <-p.stop:
				return
			case <-tk.C:
			}
			p.cl.Produce(context.Background(), &kgo.Record{Partition: int32(i) % parts, Value: fmt.Appendf(nil, "r-%d", i)}, p.acks.add)
		}
	}()
	t.Cleanup(func() { p.finish(t) })
	return p
}

// finish stops producing and waits for every answer; it returns what was
// acknowledged.
func (p *steadyProducer) finish(t testing.TB) []rec {
	select {
	case <-p.stop:
	default:
		close(p.stop)
		<-p.done
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := p.cl.Flush(ctx); err != nil {
			t.Errorf("producer flush: %v", err)
		}
	}
	p.acks.mu.Lock()
	errs := p.acks.errs
	p.acks.mu.Unlock()
	if errs > 0 {
		t.Errorf("producer: %d records not acknowledged", errs)
	}
	return p.acks.snapshot()
}

// commitMonitor reads the group's committed offsets every 200 ms and
// records any that went backwards.
type commitMonitor struct {
	mu          sync.Mutex
	latest      map[int32]int64
	regressions []string
	samples     int
	stop        context.CancelFunc
	done        chan struct{}
}

// startCommitMonitor samples through a kadm client of seeds, which asks
// the group's coordinator.
func startCommitMonitor(t testing.TB, seeds []string, group, topic string) *commitMonitor {
	t.Helper()
	adm := newAdmin(t, seeds)
	return startCommitMonitorWith(t, func(ctx context.Context) (map[int32]int64, error) {
		os, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return nil, err
		}
		out := map[int32]int64{}
		os.Each(func(o kadm.OffsetResponse) {
			if o.Topic == topic && o.Err == nil && o.At >= 0 {
				out[o.Partition] = o.At
			}
		})
		return out, nil
	})
}

// startCommitMonitorWith samples with read (a partition without a commit
// absent); a failed read is no sample.
func startCommitMonitorWith(t testing.TB, read func(context.Context) (map[int32]int64, error)) *commitMonitor {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c := &commitMonitor{latest: map[int32]int64{}, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for ctx.Err() == nil {
			qctx, qcancel := context.WithTimeout(ctx, 5*time.Second)
			got, err := read(qctx)
			qcancel()
			if err == nil {
				c.mu.Lock()
				c.samples++
				for p, o := range got {
					if prev, ok := c.latest[p]; ok && o < prev {
						c.regressions = append(c.regressions, fmt.Sprintf("partition %d: %d after %d", p, o, prev))
					}
					c.latest[p] = o
				}
				c.mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(c.finish)
	return c
}

func (c *commitMonitor) finish() {
	c.stop()
	<-c.done
}

func (c *commitMonitor) committed() map[int32]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.latest)
}

// report fails t on any committed offset that went backwards.
func (c *commitMonitor) report(t testing.TB) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	t.Logf("committed offsets sampled %d times", c.samples)
	for _, r := range c.regressions {
		t.Errorf("committed offset went backwards: %s", r)
	}
}

// deliveryVerdict is what checkDelivery found.
type deliveryVerdict struct {
	acked, consumed, duplicates int
}

// checkDelivery checks every acknowledged record against what the members
// processed. No loss: each was processed at least once, with its value. A
// record processed twice is a duplicate, allowed only inside Kafka's
// at-least-once window: the member that processed it first had not
// committed past it (its commit failed, or it never got to commit). A
// record processed again after its first processor's commit covered it is
// a violation: the group's position went backwards.
func checkDelivery(t testing.TB, acked []rec, members []*gm) deliveryVerdict {
	t.Helper()
	v, problems := judgeDelivery(acked, members)
	for _, p := range problems {
		t.Error(p)
	}
	return v
}

// judgeDelivery is checkDelivery's verdict and the problems it found.
func judgeDelivery(acked []rec, members []*gm) (deliveryVerdict, []string) {
	type delivery struct {
		member string
		value  string
		at     time.Time
	}
	byPO := map[[2]int64][]delivery{}
	committed := map[string]map[int32]int64{}
	total := 0
	for _, m := range members {
		m.mu.Lock()
		committed[m.name] = maps.Clone(m.committed)
		for _, c := range m.got {
			k := [2]int64{int64(c.partition), c.offset}
			byPO[k] = append(byPO[k], delivery{m.name, c.value, c.at})
			total++
		}
		m.mu.Unlock()
	}
	v := deliveryVerdict{acked: len(acked), consumed: total}
	var lost, wrong, violations []string
	for _, a := range acked {
		ds := byPO[[2]int64{int64(a.partition), a.offset}]
		if len(ds) == 0 {
			lost = append(lost, fmt.Sprintf("%d@%d=%s", a.partition, a.offset, a.value))
			continue
		}
		for _, d := range ds {
			if d.value != string(a.value) {
				wrong = append(wrong, fmt.Sprintf("%d@%d: %s processed %q, acknowledged %q", a.partition, a.offset, d.member, d.value, a.value))
			}
		}
	}
	for k, ds := range byPO {
		if len(ds) < 2 {
			continue
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i].at.Before(ds[j].at) })
		v.duplicates += len(ds) - 1
		first := ds[0].member
		if committed[first][int32(k[0])] > k[1] {
			violations = append(violations, fmt.Sprintf("%d@%d processed by %s after %s had committed past it (to %d)", k[0], k[1], ds[1].member, first, committed[first][int32(k[0])]))
		}
	}
	sort.Strings(violations)
	var problems []string
	if len(lost) > 0 {
		problems = append(problems, fmt.Sprintf("%d acknowledged records never processed: %v", len(lost), head(lost)))
	}
	if len(wrong) > 0 {
		problems = append(problems, fmt.Sprintf("%d records processed with another value: %v", len(wrong), head(wrong)))
	}
	if len(violations) > 0 {
		problems = append(problems, fmt.Sprintf("%d records processed again after a commit covered them: %v", len(violations), head(violations)))
	}
	return v, problems
}

func head(s []string) []string {
	if len(s) > 10 {
		return append(slices.Clone(s[:10]), fmt.Sprintf("... and %d more", len(s)-10))
	}
	return s
}

// checkFinalCommits waits until the group's committed offsets are the end
// offset of every partition: every acknowledged record committed.
func checkFinalCommits(t testing.TB, seeds []string, group, topic string, parts int32, limit time.Duration) {
	t.Helper()
	adm := newAdmin(t, seeds)
	ends, err := adm.ListEndOffsets(ctxT(t, 10*time.Second), topic)
	if err != nil {
		t.Fatalf("end offsets: %v", err)
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { want[o.Partition] = o.Offset })
	if int32(len(want)) != parts {
		t.Fatalf("end offsets of %d partitions, want %d: %v", len(want), parts, want)
	}
	waitCommitted(t, target{bootstrap: seeds}, group, topic, want, limit)
}

// require848 fails t unless every broker advertises ConsumerGroupHeartbeat
// (key 68) at v1 or later: without it franz-go silently runs the classic
// protocol, and the test would prove nothing about KIP-848.
func require848(t testing.TB, seeds []string) {
	t.Helper()
	vs, err := newAdmin(t, seeds).ApiVersions(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatalf("ApiVersions: %v", err)
	}
	for _, v := range vs {
		if v.Err != nil {
			t.Fatalf("ApiVersions at broker %d: %v", v.NodeID, v.Err)
		}
		if max, ok := v.KeyMaxVersion(68); !ok || max < 1 {
			t.Fatalf("broker %d does not advertise ConsumerGroupHeartbeat (key 68) v1+ (advertised: %v, max v%d): the consumer group protocol is not served", v.NodeID, ok, max)
		}
	}
}

// describe848 is the group as ConsumerGroupDescribe (key 69) answers it.
func describe848(t testing.TB, seeds []string, group string) kadm.DescribedConsumerGroup {
	t.Helper()
	dgs, err := newAdmin(t, seeds).DescribeConsumerGroups(ctxT(t, 10*time.Second), group)
	if err != nil {
		t.Fatalf("ConsumerGroupDescribe %s: %v", group, err)
	}
	dg, ok := dgs[group]
	if !ok || dg.Err != nil {
		t.Fatalf("ConsumerGroupDescribe %s: %v (answered %v)", group, dg.Err, ok)
	}
	return dg
}
