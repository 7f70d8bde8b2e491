package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// facadeCatalogTTL is the facade's catalogue TTL (node.catalogTTL): past it
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
	fac := startFacade(t, dev, map[string]string{"QUEEN_TOKEN": token})
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
