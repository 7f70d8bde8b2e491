package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// facadeCatalogTTL is the facade's catalogue TTL (catalogue.TTL): past it
// a request finds its listing stale and asks for a refresh.
const facadeCatalogTTL = 3 * time.Second

// hangWitness starts a KV call of the test's own, presenting token, that
// meets the hang rule already in force for token; the returned channel
// closes when queen-dev answers it, which is when that hang ends. Anything
// the facade answers before it closes was answered before every hang that
// began after the witness's had ended. It returns once queen-dev holds the
// witness (the rule counted its hit).
func hangWitness(t *testing.T, dev *queenDev, token string) <-chan struct{} {
	t.Helper()
	before := 0
	for _, r := range dev.faults(t) {
		before += r.Hits
	}
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		status, err := dev.kvAs(token, map[string]any{"op": "getMany", "ns": "queen-kafka", "keys": []string{"qk:witness"}})
		if err == nil && status != http.StatusGatewayTimeout {
			t.Errorf("the hang witness was answered %d, want the hang's 504", status)
		}
	}()
	eventually(t, 10*time.Second, "the witness meets the hang", func() (bool, string) {
		hits := 0
		for _, r := range dev.faults(t) {
			hits += r.Hits
		}
		return hits > before, fmt.Sprintf("%d hits", hits)
	})
	return ended
}

// stillHung fails t if the witness's hang has already ended.
func stillHung(t *testing.T, ended <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ended:
		t.Fatalf("%s: answered only after the hung KV call ended", what)
	default:
	}
}

// TestKVBlackHoleAtOneNode (issue 11, item 7): while every KV call of one
// facade hangs — a black hole, not an error; the rule is scoped to that
// facade's QUEEN_TOKEN — Metadata past its listing's TTL, InitProducerId
// past its first block of ids, and an idempotent franz-go producer and a
// consumer through that facade are all answered before the hang ends
// (seed 000: produce and fetch keep working while the registry is
// unreachable), and every acknowledged record is stored once.
func TestKVBlackHoleAtOneNode(t *testing.T) {
	dev, _ := sharedEnv(t)
	token := uniq("blackhole-token")
	ops := "127.0.0.1:" + strconv.Itoa(freePort(t))
	fac := startFacade(t, dev, map[string]string{"QUEEN_TOKEN": token, "QUEEN_KAFKA_HTTP_ADDR": ops})
	tg := target{bootstrap: []string{fac.addr}, dev: dev}
	t.Cleanup(func() { dev.clearFaults(t) })
	ctx := ctxT(t, 120*time.Second)
	topic := uniq("blackhole")
	createTopic(t, tg, topic, 1, nil)
	produceKgo(t, tg.bootstrap, topic, kgo.NoCompression(), []rec{{offset: 0, value: []byte("before")}})

	br := newKgo(t, tg.bootstrap).SeedBrokers()[0]
	initPID := func(what string) {
		t.Helper()
		req := kmsg.NewPtrInitProducerIDRequest()
		req.ProducerID, req.ProducerEpoch = -1, -1
		raw, err := br.Request(ctx, req)
		if err != nil {
			t.Fatalf("InitProducerId %s: %v", what, err)
		}
		if code := raw.(*kmsg.InitProducerIDResponse).ErrorCode; code != 0 {
			t.Fatalf("InitProducerId %s: code %s", what, codeName(code))
		}
	}
	// Half a block of ids (producer.IDBlock is 1,000): enough for the
	// facade to reserve the next block ahead of need.
	const half = 501
	for range half {
		initPID("before the hang")
	}
	// The block ahead is reserved in the background: the hang may only
	// start once it is held (the node then holds more than one block's
	// worth, the rest of the first and all of the next), or a loaded
	// machine races the reservation against the hang.
	eventually(t, 30*time.Second, "the next block of producer ids reserved ahead", func() (bool, string) {
		held := metric(t, scrape(t, "http://"+ops), "queen_kafka_producer_ids_reserved")
		return held > 1000, fmt.Sprintf("%v ids held", held)
	})
	metadata := func(what string) {
		t.Helper()
		raw, err := br.Request(ctx, metadataReq(topic))
		if err != nil {
			t.Fatalf("Metadata %s: %v", what, err)
		}
		if m := raw.(*kmsg.MetadataResponse); len(m.Topics) != 1 || m.Topics[0].ErrorCode != 0 || len(m.Topics[0].Partitions) != 1 {
			t.Fatalf("Metadata %s: %+v", what, m.Topics)
		}
	}
	metadata("before the hang")
	listed := time.Now()

	// Shorter than the facade's 10 s Queen budget: a facade that waits
	// for its KV answers after the hang, not at its own deadline before it.
	dev.fault(t, map[string]any{"rules": []faultRule{{Route: "kv", Token: token, Hang: true, HangMs: 9000}}})
	ended := hangWitness(t, dev, token)

	// The ids past the first block come from the block reserved ahead.
	for i := half; i < 1001; i++ {
		initPID("under the hang")
	}
	stillHung(t, ended, "InitProducerId past the first block")

	// A stock idempotent producer and a consumer through the same facade,
	// once its listing is stale: Metadata, InitProducerId, Produce, Fetch.
	for time.Since(listed) <= facadeCatalogTTL+500*time.Millisecond {
		metadata("under the hang")
		time.Sleep(200 * time.Millisecond)
	}
	stillHung(t, ended, "Metadata over a stale listing")
	want := []rec{{offset: 1, value: []byte("during-1")}, {offset: 2, value: []byte("during-2")}}
	produceKgo(t, tg.bootstrap, topic, kgo.NoCompression(), want)
	got := consumeKgo(t, tg.bootstrap, topic, 1, 3)
	stillHung(t, ended, "an idempotent producer and a consumer")
	if len(got) != 3 || string(got[1].value) != "during-1" || string(got[2].value) != "during-2" {
		t.Errorf("read back under the hang: %v", got)
	}

	dev.clearFaults(t)
	<-ended
	if res := dev.fetch(t, topic, "0", 0); res.HighWatermark != 3 {
		t.Errorf("%d records stored, want the 3 acknowledged, once each", res.HighWatermark)
	}
	initPID("after the hang")
	metadata("after the hang")
}

// matrixHangMs is how long a hang row holds each call to its route before
// queen-dev answers its own 504. Deliberately short: well inside the
// facade's 10 s Queen budget and every client's request timeout, so the
// facade must wait the hang out (not give up on the connection, not answer
// early from nothing) and then answer the route's code for a gateway
// timeout, which is the same column of the contract as its own budget
// expiring. A hang past the budget would cost the column 8 × 10 s, and a
// black hole held at length is TestKVBlackHoleAtOneNode's.
const matrixHangMs = 1500

// matrixFault is one way a Queen route fails, as the rule that makes it.
type matrixFault struct {
	name string
	rule faultRule
}

var matrixFaults = []matrixFault{
	{"429", faultRule{Status: http.StatusTooManyRequests, RetryAfter: secs(1)}},
	{"503", faultRule{Status: http.StatusServiceUnavailable}},
	{"hang", faultRule{Hang: true, HangMs: matrixHangMs}},
	{"drop", faultRule{Drop: true}},
}

// matrix is the queen-dev (auth and fault injection on) and SASL facade
// every row shares. Rules are not scoped to a token: the broker is the
// matrix's own, and whichever credential the facade presents on a route,
// the route fails.
type matrix struct {
	dev   *queenDev
	fac   *facade
	seeds []string
	ctx   context.Context
}

// matrixToken is the tenant's credential every row but authme's uses.
const matrixToken = "tok-m"

func (m *matrix) client(t *testing.T, opts ...kgo.Opt) *kgo.Client {
	return newKgo(t, m.seeds, append([]kgo.Opt{kgoPlain("matrix", matrixToken)}, opts...)...)
}

// broker is a connection of a fresh client, already authenticated: SASL
// login lists queues, so a row of the queues route must not meet its own
// fault while logging in.
func (m *matrix) broker(t *testing.T) *kgo.Broker {
	t.Helper()
	br := m.client(t).SeedBrokers()[0]
	if _, err := br.Request(m.ctx, metadataReq()); err != nil {
		t.Fatalf("warming a connection: %v", err)
	}
	return br
}

func (m *matrix) createTopic(t *testing.T, topic string) {
	t.Helper()
	res, err := kadm.NewClient(m.client(t)).CreateTopic(m.ctx, 1, 1, nil, topic)
	if err != nil || res.Err != nil {
		t.Fatalf("create %s: %v / %v", topic, err, res.Err)
	}
}

// produce writes values to topic's partition 0 through a stock idempotent
// producer, each acknowledged.
func (m *matrix) produce(t *testing.T, topic string, values ...string) {
	t.Helper()
	cl := m.client(t, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for _, v := range values {
		if err := cl.ProduceSync(m.ctx, &kgo.Record{Partition: 0, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %q to %s: %v", v, topic, err)
		}
	}
}

// topicHolding creates a one-partition topic named from prefix holding
// values, each acknowledged.
func (m *matrix) topicHolding(t *testing.T, prefix string, values ...string) string {
	t.Helper()
	topic := uniq(prefix)
	m.createTopic(t, topic)
	m.produce(t, topic, values...)
	return topic
}

// consume reads n records of topic's partition 0 from the start through a
// stock consumer at isolation level.
func (m *matrix) consume(t *testing.T, topic string, n int, level kgo.IsolationLevel) []string {
	t.Helper()
	cl := m.client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}), kgo.FetchIsolationLevel(level))
	var vs []string
	for _, r := range pollKgo(t, cl, n, 20*time.Second) {
		vs = append(vs, string(r.value))
	}
	return vs
}

// inject makes every call to route fail as f does.
func (m *matrix) inject(t *testing.T, route string, f matrixFault) {
	t.Helper()
	rule := f.rule
	rule.Route = route
	m.dev.fault(t, map[string]any{"rules": []faultRule{rule}})
}

// clear lifts the fault, failing t if no call ever met it: a row whose
// operation never reached the route proved nothing.
func (m *matrix) clear(t *testing.T) {
	t.Helper()
	rules := m.dev.faults(t)
	m.dev.clearFaults(t)
	if len(rules) != 1 || rules[0].Hits == 0 {
		t.Errorf("the rule was never met: %+v", rules)
	}
}

func request[R kmsg.Response](t *testing.T, ctx context.Context, br *kgo.Broker, req kmsg.Request) R {
	t.Helper()
	raw, err := br.Request(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return raw.(R)
}

// answered fails t unless a response carried code and throttle.
func answered(t *testing.T, what string, code, wantCode int16, throttle, wantThrottle int32) {
	t.Helper()
	if code != wantCode || throttle != wantThrottle {
		t.Errorf("%s: %s with throttle %d ms, want %s with throttle %d ms", what, codeName(code), throttle, codeName(wantCode), wantThrottle)
	}
}

// matrixRoute is one route's column: the Kafka code its operation is
// answered under each fault (faults/faults.go's table, queen-api.md §0.2,
// seed 001 "Throttling"), the throttle a 429 with Retry-After 1 carries,
// and run, which acknowledges what must not be lost, drives the operation
// under the fault, clears it, and proves the same operation succeeds and
// the data reads back once.
type matrixRoute struct {
	route    string
	codes    map[string]int16
	throttle int32
	run      func(t *testing.T, m *matrix, f matrixFault, want int16, throttle int32)
}

var (
	errLNA   = kerr.LeaderNotAvailable.Code
	errRTO   = kerr.RequestTimedOut.Code
	errNLF   = kerr.NotLeaderForPartition.Code
	errCNA   = kerr.CoordinatorNotAvailable.Code
	errQuota = kerr.ThrottlingQuotaExceeded.Code
)

func byFault(c429, c503, hang, drop int16) map[string]int16 {
	return map[string]int16{"429": c429, "503": c503, "hang": hang, "drop": drop}
}

var matrixRoutes = []matrixRoute{{
	// Metadata auto-creating an unknown topic needs a fresh listing: the
	// topic APIs' row, LEADER_NOT_AVAILABLE (retriable), a 429's throttle.
	route: "queues", codes: byFault(errLNA, errLNA, errLNA, errLNA), throttle: 1000,
	run: func(t *testing.T, m *matrix, f matrixFault, want int16, throttle int32) {
		br := m.broker(t)
		topic := uniq("fm-queues")
		req := metadataReq(topic)
		req.AllowAutoTopicCreation = true
		m.inject(t, "queues", f)
		resp := request[*kmsg.MetadataResponse](t, m.ctx, br, req)
		answered(t, "Metadata", resp.Topics[0].ErrorCode, want, resp.ThrottleMillis, throttle)
		m.clear(t)
		resp = request[*kmsg.MetadataResponse](t, m.ctx, br, req)
		if mt := resp.Topics[0]; mt.ErrorCode != 0 || len(mt.Partitions) == 0 {
			t.Fatalf("Metadata after the fault: %s, %d partitions", codeName(mt.ErrorCode), len(mt.Partitions))
		}
		m.produce(t, topic, "v")
		if got := m.consume(t, topic, 1, kgo.ReadUncommitted()); !slices.Equal(got, []string{"v"}) {
			t.Errorf("read back %v", got)
		}
	},
}, {
	// CreateTopics v6 (the facade's newest): a throttled create is
	// THROTTLING_QUOTA_EXCEEDED (KIP-599), anything else LEADER_NOT_AVAILABLE;
	// a refused create leaves nothing behind, so the same create succeeds.
	route: "configure", codes: byFault(errQuota, errLNA, errLNA, errLNA), throttle: 1000,
	run: func(t *testing.T, m *matrix, f matrixFault, want int16, throttle int32) {
		br := m.broker(t)
		topic := uniq("fm-configure")
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 10000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 1, 1
		req.Topics = append(req.Topics, rt)
		m.inject(t, "configure", f)
		resp := request[*kmsg.CreateTopicsResponse](t, m.ctx, br, req)
		if resp.Version < 6 {
			t.Fatalf("CreateTopics answered at v%d, the row is about v6", resp.Version)
		}
		answered(t, "CreateTopics", resp.Topics[0].ErrorCode, want, resp.ThrottleMillis, throttle)
		m.clear(t)
		m.createTopic(t, topic)
		m.produce(t, topic, "v")
		if got := storedValues(t, m.dev, topic, 0); !slices.Equal(got, []string{"v"}) {
			t.Errorf("read back %v", got)
		}
	},
}, {
	// DeleteTopics: a topic write, REQUEST_TIMED_OUT with the throttle on a
	// 429, LEADER_NOT_AVAILABLE otherwise; the topic and its records stay.
	route: "delete", codes: byFault(errRTO, errLNA, errLNA, errLNA), throttle: 1000,
	run: func(t *testing.T, m *matrix, f matrixFault, want int16, throttle int32) {
		topic, br := m.topicHolding(t, "fm-delete", "kept"), m.broker(t)
		req := kmsg.NewPtrDeleteTopicsRequest()
		// Named for every version: TopicNames up to v5, Topics from v6.
		req.TimeoutMillis, req.TopicNames = 10000, []string{topic}
		req.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: kmsg.StringPtr(topic)}}
		m.inject(t, "delete", f)
		resp := request[*kmsg.DeleteTopicsResponse](t, m.ctx, br, req)
		answered(t, "DeleteTopics", resp.Topics[0].ErrorCode, want, resp.ThrottleMillis, throttle)
		m.clear(t)
		if got := m.consume(t, topic, 1, kgo.ReadUncommitted()); !slices.Equal(got, []string{"kept"}) {
			t.Errorf("after the refused delete: read back %v", got)
		}
		adm := kadm.NewClient(m.client(t))
		if res, err := adm.DeleteTopic(m.ctx, topic); err != nil || res.Err != nil {
			t.Fatalf("delete %s after the fault: %v / %v", topic, err, res.Err)
		}
		if td, err := adm.ListTopics(m.ctx); err != nil || td.Has(topic) {
			t.Errorf("after the delete: listing %v, still has %s: %v", err, topic, td.Has(topic))
		}
	},
}, {
	// Produce: REQUEST_TIMED_OUT for everything, which every producer
	// retries; nothing of the refused batch is stored, so resending it
	// stores it once.
	route: "push", codes: byFault(errRTO, errRTO, errRTO, errRTO), throttle: 1000,
	run: func(t *testing.T, m *matrix, f matrixFault, want int16, throttle int32) {
		topic, br := m.topicHolding(t, "fm-push", "before"), m.broker(t)
		req := produceRaw(topic, 0, 10000, rawBatch(-1, -1, -1, "refused"))
		m.inject(t, "push", f)
		resp := request[*kmsg.ProduceResponse](t, m.ctx, br, req)
		answered(t, "Produce", resp.Topics[0].Partitions[0].ErrorCode, want, resp.ThrottleMillis, throttle)
		m.clear(t)
		resp = request[*kmsg.ProduceResponse](t, m.ctx, br, req)
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("Produce resent after the fault: %s", codeName(code))
		}
		m.produce(t, topic, "after")
		if got := storedValues(t, m.dev, topic, 0); !slices.Equal(got, []string{"before", "refused", "after"}) {
			t.Errorf("stored %v, want before, refused, after, once each", got)
		}
	},
}, {
	// Fetch: a 429 is the throttle with no records, error 0 and watermarks
	// -1 (seed 001); anything transient NOT_LEADER_OR_FOLLOWER.
	route: "fetch", codes: byFault(0, errNLF, errNLF, errNLF), throttle: 1000,
	run: func(t *testing.T, m *matrix, f matrixFault, want int16, throttle int32) {
		topic, br := m.topicHolding(t, "fm-fetch", "r0"), m.broker(t)
		req := fetchP0(topic, 6, 0)
		m.inject(t, "fetch", f)
		resp := request[*kmsg.FetchResponse](t, m.ctx, br, req)
		p := resp.Topics[0].Partitions[0]
		answered(t, "Fetch", p.ErrorCode, want, resp.ThrottleMillis, throttle)
		if len(p.RecordBatches) != 0 || p.HighWatermark != -1 {
			t.Errorf("Fetch under the fault: %d bytes, high watermark %d; want none and -1", len(p.RecordBatches), p.HighWatermark)
		}
		m.clear(t)
		resp = request[*kmsg.FetchResponse](t, m.ctx, br, req)
		if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) == 0 || p.HighWatermark != 1 {
			t.Errorf("Fetch after the fault: %s, %d bytes, high watermark %d", codeName(p.ErrorCode), len(p.RecordBatches), p.HighWatermark)
		}
		if got := m.consume(t, topic, 1, kgo.ReadUncommitted()); !slices.Equal(got, []string{"r0"}) {
			t.Errorf("read back %v", got)
		}
	},
}, {
	// OffsetCommit: the group APIs' column (coordinator/errors.go): a 429
	// and anything transient COORDINATOR_NOT_AVAILABLE, never a throttle;
	// the acknowledged commit stands and the refused one is not applied.
	route: "kv", codes: byFault(errCNA, errCNA, errCNA, errCNA), throttle: 0,
	run: func(t *testing.T, m *matrix, f matrixFault, want int16, throttle int32) {
		topic, group := uniq("fm-kv"), uniq("fm-kv-group")
		m.createTopic(t, topic)
		br := m.broker(t)
		commit := func(offset int64) *kmsg.OffsetCommitResponse {
			req := commitReq(group, topic, 0, offset)
			req.Version = 6
			return request[*kmsg.OffsetCommitResponse](t, m.ctx, br, req)
		}
		committed := func() int64 {
			t.Helper()
			offs, err := kadm.NewClient(m.client(t)).FetchOffsets(m.ctx, group)
			if err != nil {
				t.Fatalf("OffsetFetch %s: %v", group, err)
			}
			o, ok := offs.Lookup(topic, 0)
			if !ok || o.Err != nil {
				t.Fatalf("OffsetFetch %s: %v / %v", group, ok, o.Err)
			}
			return o.At
		}
		if code := commit(1).Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("OffsetCommit before the fault: %s", codeName(code))
		}
		m.inject(t, "kv", f)
		resp := commit(2)
		answered(t, "OffsetCommit", resp.Topics[0].Partitions[0].ErrorCode, want, resp.ThrottleMillis, throttle)
		m.clear(t)
		if at := committed(); at != 1 {
			t.Errorf("after the refused commit: committed %d, want the acknowledged 1", at)
		}
		if code := commit(2).Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("OffsetCommit after the fault: %s", codeName(code))
		}
		if at := committed(); at != 2 {
			t.Errorf("committed %d, want 2", at)
		}
	},
}, {
	// EndTxn(commit): the transaction APIs' row, COORDINATOR_NOT_AVAILABLE
	// for everything and never a throttle, the transaction kept open; the
	// same EndTxn then commits it, and its records read back once.
	route: "transaction", codes: byFault(errCNA, errCNA, errCNA, errCNA), throttle: 0,
	run: func(t *testing.T, m *matrix, f matrixFault, want int16, throttle int32) {
		topic := uniq("fm-txn")
		m.createTopic(t, topic)
		cl := m.client(t)
		br := m.broker(t)
		x := initRawTxn(t, cl, uniq("fm-txn-id"), 60000)
		x.mustAddPartitions(cl, topic, 0)
		if code, _ := x.produce(br, topic, 0, "t1", "t2"); code != 0 {
			t.Fatalf("transactional Produce: %s", codeName(code))
		}
		// On the coordinator's own connection: a client's request path
		// would retry COORDINATOR_NOT_AVAILABLE until the fault clears.
		end := kmsg.NewPtrEndTxnRequest()
		end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = x.id, x.pid, x.epoch, true
		m.inject(t, "transaction", f)
		resp := request[*kmsg.EndTxnResponse](t, m.ctx, br, end)
		answered(t, "EndTxn", resp.ErrorCode, want, resp.ThrottleMillis, throttle)
		m.clear(t)
		if code := request[*kmsg.EndTxnResponse](t, m.ctx, br, end).ErrorCode; code != 0 {
			t.Fatalf("EndTxn after the fault: %s", codeName(code))
		}
		if got := m.consume(t, topic, 2, kgo.ReadCommitted()); !slices.Equal(got, []string{"t1", "t2"}) {
			t.Errorf("read committed %v, want t1, t2", got)
		}
		if got := storedValues(t, m.dev, topic, 0); !slices.Equal(got, []string{"t1", "t2"}) {
			t.Errorf("stored %v, want t1, t2 once each", got)
		}
	},
}, {
	// SASL login of a credential the facade has not met asks GET /auth/me
	// for its tenant: failing, the connection closes with no error code
	// (which clients retry), never SASL_AUTHENTICATION_FAILED and never
	// filed under the credential; the login after the fault is the
	// tenant's, so it reads the offsets another key of the tenant
	// committed.
	route: "authme",
	run: func(t *testing.T, m *matrix, f matrixFault, _ int16, _ int32) {
		topic, group := uniq("fm-authme"), uniq("fm-authme-group")
		m.createTopic(t, topic)
		req := commitReq(group, topic, 0, 7)
		req.Version = 6
		if code := request[*kmsg.OffsetCommitResponse](t, m.ctx, m.broker(t), req).Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("OffsetCommit as %s: %s", matrixToken, codeName(code))
		}
		token := "tok-authme-" + f.name
		m.inject(t, "authme", f)
		br := newKgo(t, m.seeds, kgoPlain("fresh", token)).SeedBrokers()[0]
		_, err := br.Request(m.ctx, metadataReq())
		switch {
		case err == nil:
			t.Errorf("a login whose tenant is unknown was answered")
		case errors.Is(err, kerr.SaslAuthenticationFailed):
			t.Errorf("a transient /auth/me failure was told a bad password: %v", err)
		}
		m.clear(t)
		cl := newKgo(t, m.seeds, kgoPlain("fresh", token))
		offs, err := kadm.NewClient(cl).FetchOffsets(m.ctx, group)
		if err != nil {
			t.Fatalf("OffsetFetch as %s after the fault: %v", token, err)
		}
		if o, ok := offs.Lookup(topic, 0); !ok || o.Err != nil || o.At != 7 {
			t.Errorf("OffsetFetch as %s: %+v (found %v), want the tenant's 7", token, o, ok)
		}
	},
}}

// TestFaultMatrix (issue 11, "Fault matrix"): for every Queen route the
// facade uses × {429 with Retry-After, 503, hang, drop}, a real client
// operation over that route is answered the contract's code (and a 429's
// throttle where the contract gives one), nothing acknowledged is lost, and
// once DELETE /dev/faults clears the fault the same operation succeeds and
// its data reads back once. One queen-dev and one facade serve every row;
// rows run in order because a rule list is the broker's whole.
func TestFaultMatrix(t *testing.T) {
	var tokens []string
	tokens = append(tokens, matrixToken+"=m")
	for _, f := range matrixFaults {
		tokens = append(tokens, "tok-authme-"+f.name+"=m")
	}
	dev := startQueenDev(t, devOptions{faults: true, tokens: strings.Join(tokens, ",")})
	dev.admin = matrixToken
	fac := startFacade(t, dev, map[string]string{"QUEEN_KAFKA_SASL": "plain"})
	m := &matrix{dev: dev, fac: fac, seeds: []string{fac.addr}, ctx: ctxT(t, 300*time.Second)}
	t.Cleanup(func() { dev.clearFaults(t) })
	for _, r := range matrixRoutes {
		for _, f := range matrixFaults {
			t.Run(r.route+"/"+f.name, func(t *testing.T) {
				defer dev.clearFaults(t)
				want, throttle := r.codes[f.name], int32(0)
				if f.name == "429" {
					throttle = r.throttle
				}
				r.run(t, m, f, want, throttle)
			})
		}
	}
	if !strings.Contains(fac.Out.From(0), "asking Queen which tenant the token acts for") {
		t.Errorf("no login closed for a failed /auth/me")
	}
	mustRun(t, fac, "after the fault matrix")
}
