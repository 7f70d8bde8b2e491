package e2e

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// faultRule is one queen-dev fault-injection rule (package queen/dev doc).
type faultRule struct {
	Route      string `json:"route"`
	Token      string `json:"token,omitempty"`
	Status     int    `json:"status,omitempty"`
	RetryAfter *int   `json:"retryAfter,omitempty"`
	Hang       bool   `json:"hang,omitempty"`
	HangMs     int    `json:"hangMs,omitempty"`
	Drop       bool   `json:"drop,omitempty"`
	Count      int    `json:"count,omitempty"`
	Hits       int    `json:"hits,omitempty"` // as GET /dev/faults reports it
}

func secs(n int) *int { return &n }

// throttleHook records every throttle a franz-go client obeyed.
type throttleHook struct {
	mu   sync.Mutex
	seen []time.Duration
}

func (h *throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	h.mu.Lock()
	h.seen = append(h.seen, d)
	h.mu.Unlock()
}

func (h *throttleHook) max() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	var m time.Duration
	for _, d := range h.seen {
		m = max(m, d)
	}
	return m
}

// TestQueenFaults proves the facade's mapping of Queen failures against a
// real queen-dev answering them (seed 001 "Throttling", seed 000's refusal
// table, contract §0.2). The rules are scoped to this facade's own
// QUEEN_TOKEN, so the other tests sharing the broker never meet them; the
// subtests run in order because a POST replaces the whole rule list.
func TestQueenFaults(t *testing.T) {
	dev, _ := sharedEnv(t)
	token := uniq("fault-token")
	fac := startFacade(t, dev, map[string]string{"QUEEN_TOKEN": token})
	tg := target{bootstrap: []string{fac.addr}, dev: dev}
	set := func(t *testing.T, rules ...faultRule) {
		t.Helper()
		for i := range rules {
			rules[i].Token = token
		}
		dev.fault(t, map[string]any{"rules": rules})
	}
	t.Cleanup(func() { dev.clearFaults(t) })
	// seed is a connection to this facade itself, for hand-built requests.
	seed := func(t *testing.T) *kgo.Broker { return newKgo(t, tg.bootstrap).SeedBrokers()[0] }
	produceReq := func(topic, value string) byNameProduce {
		return produceRaw(topic, 0, 10000, rawBatch(-1, -1, -1, value))
	}
	ctx := ctxT(t, 120*time.Second)

	t.Run("produce-429", func(t *testing.T) {
		defer dev.clearFaults(t)
		topic := uniq("f429p")
		createTopic(t, tg, topic, 1, nil)
		br := seed(t)
		set(t, faultRule{Route: "push", Status: 429, RetryAfter: secs(1), Count: 1})
		raw, err := br.Request(ctx, produceReq(topic, "x"))
		if err != nil {
			t.Fatalf("produce: %v", err)
		}
		resp := raw.(*kmsg.ProduceResponse)
		p := resp.Topics[0].Partitions[0]
		if resp.ThrottleMillis != 1000 || p.ErrorCode != kerr.RequestTimedOut.Code {
			t.Errorf("produce under 429 Retry-After 1: throttle %d error %d, want 1000 / REQUEST_TIMED_OUT", resp.ThrottleMillis, p.ErrorCode)
		}
		if res := dev.fetch(t, topic, "0", 0); res.HighWatermark != 0 {
			t.Errorf("a throttled produce wrote %d records", res.HighWatermark)
		}

		// A stock producer rides it out: it obeys the throttle, retries, and
		// the application sees success, with the record stored once.
		hook := &throttleHook{}
		set(t, faultRule{Route: "push", Status: 429, RetryAfter: secs(1), Count: 2})
		produceKgo(t, tg.bootstrap, topic, kgo.SnappyCompression(), []rec{{offset: 0, value: []byte("through the throttle")}}, kgo.WithHooks(hook))
		if hook.max() < time.Second {
			t.Errorf("the producer saw throttle %s, want ≥ 1s", hook.max())
		}
		if res := dev.fetch(t, topic, "0", 0); res.HighWatermark != 1 {
			t.Errorf("after the throttle: %d records stored, want exactly 1", res.HighWatermark)
		}
	})

	t.Run("fetch-429", func(t *testing.T) {
		defer dev.clearFaults(t)
		topic := uniq("f429f")
		createTopic(t, tg, topic, 1, nil)
		produceKgo(t, tg.bootstrap, topic, kgo.NoCompression(), []rec{{offset: 0, value: []byte("v")}})
		br := seed(t)
		set(t, faultRule{Route: "fetch", Status: 429, RetryAfter: secs(2), Count: 1})
		req := fetchP0(topic, 6, 0)
		raw, err := br.Request(ctx, req)
		if err != nil {
			t.Fatalf("fetch: %v", err)
		}
		resp := raw.(*kmsg.FetchResponse)
		p := resp.Topics[0].Partitions[0]
		if resp.ThrottleMillis != 2000 || p.ErrorCode != 0 || len(p.RecordBatches) != 0 || p.HighWatermark != -1 {
			t.Errorf("fetch under 429 Retry-After 2: throttle %d error %d %d bytes hw %d, want 2000 / 0 / none / -1", resp.ThrottleMillis, p.ErrorCode, len(p.RecordBatches), p.HighWatermark)
		}
		// Without the rule the same fetch reads the record.
		raw, err = br.Request(ctx, req)
		if err != nil || len(raw.(*kmsg.FetchResponse).Topics[0].Partitions[0].RecordBatches) == 0 {
			t.Errorf("fetch after the throttle: %v, no records", err)
		}
	})

	t.Run("metadata-429", func(t *testing.T) {
		defer dev.clearFaults(t)
		br := seed(t)
		// The listing is refused twice: a Metadata finding its listing older
		// than the catalogue's TTL (a slow machine) refreshes it before the
		// forced refresh an auto-create makes, and with one refusal only
		// that first refresh would see it, the create then going through.
		set(t, faultRule{Route: "queues", Status: 429, RetryAfter: secs(3), Count: 2})
		req := metadataReq(uniq("f429m"))
		req.AllowAutoTopicCreation = true
		raw, err := br.Request(ctx, req)
		if err != nil {
			t.Fatalf("metadata: %v", err)
		}
		resp := raw.(*kmsg.MetadataResponse)
		if resp.ThrottleMillis != 3000 || resp.Topics[0].ErrorCode != kerr.LeaderNotAvailable.Code {
			t.Errorf("metadata under 429 Retry-After 3: throttle %d topic error %d, want 3000 / LEADER_NOT_AVAILABLE", resp.ThrottleMillis, resp.Topics[0].ErrorCode)
		}
	})

	for _, status := range []int{401, 403} {
		t.Run("produce-fetch-"+http.StatusText(status), func(t *testing.T) {
			defer dev.clearFaults(t)
			topic := uniq("fauth")
			createTopic(t, tg, topic, 1, nil)
			br := seed(t)
			set(t, faultRule{Route: "push", Status: status}, faultRule{Route: "fetch", Status: status})
			req := produceReq(topic, "x")
			req.Version = 8 // error_message
			raw, err := br.Request(ctx, req)
			if err != nil {
				t.Fatalf("produce: %v", err)
			}
			p := raw.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
			if p.ErrorCode != kerr.TopicAuthorizationFailed.Code || p.ErrorMessage == nil || !strings.Contains(*p.ErrorMessage, "injected by queen-dev") {
				t.Errorf("produce under %d: error %d message %v, want TOPIC_AUTHORIZATION_FAILED with Queen's reason", status, p.ErrorCode, p.ErrorMessage)
			}
			// The application sees it, at once and without retrying.
			cl := newKgo(t, tg.bootstrap, kgo.DefaultProduceTopic(topic))
			pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			err = cl.ProduceSync(pctx, &kgo.Record{Value: []byte("y")}).FirstErr()
			cancel()
			if !errors.Is(err, kerr.TopicAuthorizationFailed) {
				t.Errorf("kgo produce under %d: %v, want TOPIC_AUTHORIZATION_FAILED", status, err)
			}
			raw, err = br.Request(ctx, fetchP0(topic, 6, 0))
			if err != nil {
				t.Fatalf("fetch: %v", err)
			}
			if code := raw.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.TopicAuthorizationFailed.Code {
				t.Errorf("fetch under %d: error %d, want TOPIC_AUTHORIZATION_FAILED", status, code)
			}
		})
	}

	t.Run("produce-503-retried", func(t *testing.T) {
		defer dev.clearFaults(t)
		topic := uniq("f503")
		createTopic(t, tg, topic, 1, nil)
		set(t, faultRule{Route: "push", Status: 503, Count: 2})
		produceKgo(t, tg.bootstrap, topic, kgo.SnappyCompression(), []rec{{offset: 0, value: []byte("after 503")}})
		if res := dev.fetch(t, topic, "0", 0); res.HighWatermark != 1 {
			t.Errorf("after two 503s: %d records stored, want exactly 1", res.HighWatermark)
		}
	})

	commit := func(t *testing.T, group, topic string) *kmsg.OffsetCommitResponse {
		t.Helper()
		br := seed(t)
		req := commitReq(group, topic, 0, 1)
		req.Version = 6
		raw, err := br.Request(ctx, req)
		if err != nil {
			t.Fatalf("offset commit: %v", err)
		}
		return raw.(*kmsg.OffsetCommitResponse)
	}
	t.Run("offset-commit-429-and-401", func(t *testing.T) {
		defer dev.clearFaults(t)
		topic, group := uniq("fkv"), uniq("g-fkv")
		createTopic(t, tg, topic, 1, nil)
		set(t, faultRule{Route: "kv", Status: 429, RetryAfter: secs(5)})
		resp := commit(t, group, topic)
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.CoordinatorNotAvailable.Code || resp.ThrottleMillis != 0 {
			t.Errorf("offset commit under KV 429: error %d throttle %d, want COORDINATOR_NOT_AVAILABLE and no throttle", code, resp.ThrottleMillis)
		}
		set(t, faultRule{Route: "kv", Status: 401})
		if code := commit(t, group, topic).Topics[0].Partitions[0].ErrorCode; code != kerr.GroupAuthorizationFailed.Code {
			t.Errorf("offset commit under KV 401: error %d, want GROUP_AUTHORIZATION_FAILED", code)
		}
		dev.clearFaults(t)
		if code := commit(t, group, topic).Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Errorf("offset commit without faults: error %d", code)
		}
	})
}
