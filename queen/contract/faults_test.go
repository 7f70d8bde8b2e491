package contract

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/queen"
)

// setFaults replaces the process's fault rules (POST /dev/faults).
func (p *devProc) setFaults(t testing.TB, rules ...map[string]any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"rules": rules})
	if r := p.raw(t, "POST", "/dev/faults", "", string(body)); r.Status != 200 {
		t.Fatalf("POST /dev/faults: %d %s", r.Status, r.Body)
	}
}

// The client's error mapping (§0.2) proven against a real process: every
// status class, Retry-After forms, a hang past the client's budget and a
// dropped connection.
func TestFaultMapping(t *testing.T) {
	p := startDev(t, "", map[string]string{"QUEEN_DEV_FAULTS": "true"})
	c := p.client(t, "")
	q := uniq("faults")
	pushN(t, c, q, "0", 1)
	push := func(c *queen.Client) error {
		_, err := c.Push(ctx, []queen.PushItem{{Queue: q, Partition: "0", Payload: rawJSON(1)}})
		return err
	}
	kv := func(c *queen.Client) error {
		_, err := c.KV(ctx, []queen.KVOp{kvGet("qk:x")})
		return err
	}

	t.Run("429 with Retry-After", func(t *testing.T) {
		p.setFaults(t, map[string]any{"route": "push", "status": 429, "retryAfter": 7, "count": 1})
		err := push(c)
		mustKind(t, err, queen.KindThrottled)
		if d, ok := queen.RetryAfter(err); !ok || d != 7*time.Second || queen.ThrottleMillis(d) != 7000 {
			t.Fatalf("RetryAfter %v %v", d, ok)
		}
		if err := push(c); err != nil {
			t.Fatalf("count:1 rule still firing: %v", err)
		}
	})
	t.Run("429 with HTTP-date Retry-After", func(t *testing.T) {
		p.setFaults(t, map[string]any{"route": "fetch", "status": 429, "retryAfterRaw": "Wed, 21 Oct 2026 07:28:00 GMT", "count": 1})
		_, err := c.Fetch(ctx, queen.FetchRequest{Entries: []queen.FetchEntry{{Queue: q, Partition: "0"}}})
		mustKind(t, err, queen.KindThrottled)
		if d, ok := queen.RetryAfter(err); !ok || d != 0 || queen.ThrottleMillis(d) != 1000 {
			t.Fatalf("HTTP-date must count as absent: %v %v", d, ok)
		}
	})
	t.Run("429 without Retry-After", func(t *testing.T) {
		p.setFaults(t, map[string]any{"route": "queues", "status": 429, "count": 1})
		_, err := c.Queues(ctx)
		mustKind(t, err, queen.KindThrottled)
		if d, _ := queen.RetryAfter(err); queen.ThrottleMillis(d) != 1000 {
			t.Fatalf("absent Retry-After: %v", d)
		}
	})
	t.Run("503 is transient, never a throttle", func(t *testing.T) {
		p.setFaults(t, map[string]any{"route": "kv", "status": 503, "retryAfter": 1, "count": 1})
		err := kv(c)
		qe := mustKind(t, err, queen.KindTransient)
		if _, throttled := queen.RetryAfter(err); throttled || qe.Status != 503 || !queen.Retriable(err) {
			t.Fatalf("%#v", err)
		}
	})
	for status, want := range map[int]queen.Kind{
		408: queen.KindTransient, 502: queen.KindTransient, 504: queen.KindTransient,
		500: queen.KindServer, 401: queen.KindUnauthorized, 403: queen.KindForbidden, 413: queen.KindTooLarge,
	} {
		p.setFaults(t, map[string]any{"route": "any", "status": status, "count": 1})
		qe := mustKind(t, kv(c), want)
		if qe.Status != status {
			t.Fatalf("status %d reported as %d", status, qe.Status)
		}
	}
	t.Run("transaction 429", func(t *testing.T) {
		p.setFaults(t, map[string]any{"route": "transaction", "status": 429, "retryAfter": 2, "count": 1})
		_, err := c.Transaction(ctx, queen.TxnRequest{KV: []queen.KVOp{kvPut("qk:txn:f", 1, nil)}})
		mustKind(t, err, queen.KindThrottled)
	})
	t.Run("hang past the request timeout", func(t *testing.T) {
		p.setFaults(t, map[string]any{"route": "queues", "hang": true, "hangMs": 5000, "count": 1})
		short, err := queen.New(queen.Config{URL: p.url, RequestTimeout: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = short.Queues(ctx)
		mustKind(t, err, queen.KindTimeout)
		if el := time.Since(start); el > 4*time.Second {
			t.Fatalf("timeout took %v", el)
		}
	})
	t.Run("fetch hang bounded by request timeout + maxWaitMs", func(t *testing.T) {
		p.setFaults(t, map[string]any{"route": "fetch", "hang": true, "hangMs": 5000, "count": 1})
		short, _ := queen.New(queen.Config{URL: p.url, RequestTimeout: 200 * time.Millisecond})
		start := time.Now()
		_, err := short.Fetch(ctx, queen.FetchRequest{Entries: []queen.FetchEntry{{Queue: q, Partition: "0", Offset: 1}}, MaxWaitMs: 300, MinBytes: 1})
		mustKind(t, err, queen.KindTimeout)
		if el := time.Since(start); el < 450*time.Millisecond || el > 4*time.Second {
			t.Fatalf("fetch budget: gave up after %v, want about 500 ms", el)
		}
	})
	t.Run("drop", func(t *testing.T) {
		p.setFaults(t, map[string]any{"route": "push", "drop": true, "count": 1})
		mustKind(t, push(c), queen.KindTransport)
		if err := push(c); err != nil {
			t.Fatalf("after a dropped connection: %v", err)
		}
	})
	t.Run("auth/me failure", func(t *testing.T) {
		p.setFaults(t, map[string]any{"route": "authme", "status": 503, "count": 1})
		_, err := c.AuthMe(ctx)
		mustKind(t, err, queen.KindTransient)
	})
	t.Run("token-scoped rule", func(t *testing.T) {
		p.setFaults(t, map[string]any{"route": "kv", "token": "node-2", "status": 429, "retryAfter": 3})
		if err := kv(c.As("node-1", "")); err != nil {
			t.Fatalf("rule for node-2 hit node-1: %v", err)
		}
		mustKind(t, kv(c.As("node-2", "")), queen.KindThrottled)
		if r := p.raw(t, "DELETE", "/dev/faults", "", ""); r.Status != 200 {
			t.Fatalf("DELETE /dev/faults: %d", r.Status)
		}
		if err := kv(c.As("node-2", "")); err != nil {
			t.Fatalf("rules not cleared: %v", err)
		}
	})
	t.Run("consume routes", func(t *testing.T) {
		for route, path := range map[string]string{"pop": "/api/v1/pop/queue/" + q, "dlq": "/api/v1/dlq", "groups": "/api/v1/consumer-groups/lagging"} {
			p.setFaults(t, map[string]any{"route": route, "status": 503, "count": 1})
			if r := p.raw(t, "GET", path, "", ""); r.Status != 503 {
				t.Errorf("%s: %d %s", route, r.Status, r.Body)
			}
		}
		p.setFaults(t, map[string]any{"route": "ack", "status": 429, "retryAfter": 1, "count": 1})
		if r := p.raw(t, "POST", "/api/v1/ack", "", `{}`); r.Status != 429 || r.Header.Get("Retry-After") != "1" {
			t.Errorf("ack: %d %s", r.Status, r.Body)
		}
	})
	// Nothing was written by a faulted call.
	if f := fetchOne(t, c, q, "0", 0); f.HighWatermark != 3 {
		t.Fatalf("hwm %d: the faulted pushes must not be stored (1 initial + 2 successful)", f.HighWatermark)
	}
}

// Without QUEEN_DEV_FAULTS the fault route does not exist.
func TestFaultsOffByDefault(t *testing.T) {
	if r := shared.raw(t, "POST", "/dev/faults", "", `{"rules":[{"route":"any","status":500}]}`); r.Status != 404 {
		t.Fatalf("POST /dev/faults without QUEEN_DEV_FAULTS: %d %s", r.Status, r.Body)
	}
	if _, err := shared.client(t, "").Queues(ctx); err != nil {
		t.Fatal(err)
	}
}

// QUEEN_MAX_BODY_BYTES: a body over the ceiling is 413 on every body route,
// nothing written.
func TestOversizedBody(t *testing.T) {
	p := startDev(t, "", map[string]string{"QUEEN_MAX_BODY_BYTES": "4096"})
	c := p.client(t, "")
	q := uniq("big")
	pushN(t, c, q, "0", 1)
	big := make([]byte, 5000)
	for i := range big {
		big[i] = 'x'
	}
	_, err := c.Push(ctx, []queen.PushItem{{Queue: q, Partition: "0", Payload: rawJSON(string(big))}})
	mustKind(t, err, queen.KindTooLarge)
	_, err = c.KV(ctx, []queen.KVOp{kvPut("qk:big", string(big), nil)})
	mustKind(t, err, queen.KindTooLarge)
	_, err = c.Transaction(ctx, queen.TxnRequest{KV: []queen.KVOp{kvPut("qk:big", string(big), nil)}})
	mustKind(t, err, queen.KindTooLarge)
	for _, path := range []string{"/api/v1/fetch", "/api/v1/configure"} {
		if r := p.raw(t, "POST", path, "", `{"pad":"`+string(big)+`"}`); r.Status != 413 {
			t.Fatalf("%s: %d", path, r.Status)
		}
	}
	if f := fetchOne(t, c, q, "0", 0); f.HighWatermark != 1 {
		t.Fatalf("oversized push stored: hwm %d", f.HighWatermark)
	}
}
