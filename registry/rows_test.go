package registry

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Rows under the prefix that are not node rows never become members, and a
// prefix crowded past one page is read to the end rather than cut short.
func TestLiveSetIgnoresRowsThatAreNotNodeRows(t *testing.T) {
	h := newHarness(t)
	for i := range ListLimit + 6 { // sort before "1": node 1 lands on page two
		h.write(fmt.Sprintf("qk:node:queen:00junk%02d", i), map[string]int{"i": i}, 3600)
	}
	h.write("qk:node:queen:01", other(1, "x"), 3600)               // not the canonical decimal
	h.write("qk:node:queen:65", other(65, "x"), 3600)              // out of range
	h.write("qk:node:queen:3", other(4, "x"), 3600)                // value disagrees with key
	h.write("qk:node:queen:5", json.RawMessage(`"garbage"`), 3600) // not a row
	h.write("qk:node:queen:6", Node{ID: 6, Host: "", Port: 1}, 3600)
	h.write("qk:node:queenie:7", other(7, "x"), 3600) // another cluster's prefix
	a := h.start(h.store, h.cfg(1, "a"))
	h.start(h.store, h.cfg(2, "b"))
	h.tick(2)
	if got := fmt.Sprint(ids(a.Live())); got != "[1 2]" {
		t.Fatalf("live set %s, want [1 2]", got)
	}
	if err := a.Err(); err != nil {
		t.Fatal(err)
	}
	logs := h.logs.String()
	for _, k := range []string{"qk:node:queen:01", "qk:node:queen:65", "qk:node:queen:3", "qk:node:queen:5", "qk:node:queen:6"} {
		if !strings.Contains(logs, "key="+k+"\n") {
			t.Errorf("invalid row %s not reported", k)
		}
	}
	// Reported once, not on every heartbeat.
	h.tick(2)
	if n := strings.Count(h.logs.String(), "key=qk:node:queen:01\n"); n != 2 { // one per session
		t.Errorf("invalid row reported %d times", n)
	}
}

func TestConfigRefusesWhatTheSeedRefuses(t *testing.T) {
	h := newHarness(t)
	good := h.cfg(1, "a")
	if err := good.validate(); err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func(*Config){
		"node id 0":       func(c *Config) { c.NodeID = 0 },
		"node id 65":      func(c *Config) { c.NodeID = 65 },
		"empty cluster":   func(c *Config) { c.Cluster = "" },
		"cluster colon":   func(c *Config) { c.Cluster = "a:b" },
		"long cluster":    func(c *Config) { c.Cluster = strings.Repeat("a", 65) },
		"no host":         func(c *Config) { c.Host = "" },
		"port 0":          func(c *Config) { c.Port = 0 },
		"ttl under 3x hb": func(c *Config) { c.TTL = 3*c.Heartbeat - time.Millisecond },
		"no heartbeat":    func(c *Config) { c.Heartbeat = 0 },
	} {
		c := good
		mutate(&c)
		if err := c.validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestTimingDerivations(t *testing.T) {
	for _, tc := range []struct {
		hb, ttl       time.Duration
		secs          int64
		trust, budget time.Duration
	}{
		{2 * time.Second, 10 * time.Second, 10, 8 * time.Second, 2 * time.Second},
		{500 * time.Millisecond, 3 * time.Second, 3, 2500 * time.Millisecond, time.Second},
		{1200 * time.Millisecond, 3999 * time.Millisecond, 3, 1800 * time.Millisecond, 1200 * time.Millisecond},
		{30 * time.Second, 120 * time.Second, 120, 90 * time.Second, 30 * time.Second},
	} {
		c := Config{Heartbeat: tc.hb, TTL: tc.ttl}
		if c.ttlSeconds() != tc.secs || c.trust() != tc.trust || c.callBudget() != tc.budget {
			t.Errorf("hb %v ttl %v: ttlSeconds %d trust %v budget %v, want %d %v %v",
				tc.hb, tc.ttl, c.ttlSeconds(), c.trust(), c.callBudget(), tc.secs, tc.trust, tc.budget)
		}
	}
}
