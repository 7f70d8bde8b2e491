package dev

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// FaultRule is one injected failure (see the package doc). Exactly one of
// Status, Hang and Drop says what happens.
type FaultRule struct {
	// Route is queues, configure, delete, push, fetch, kv, transaction,
	// authme, groups (every consumer-groups route), pop, ack (ack, ack
	// batch, lease extension), dlq (the DLQ routes and message retry) or
	// any.
	Route string `json:"route"`
	// Token, when set, restricts the rule to callers presenting this bearer.
	Token string `json:"token,omitempty"`
	// Status answers this HTTP status with a contract-shaped body.
	Status int `json:"status,omitempty"`
	// RetryAfter adds "Retry-After: <n>" (integer seconds) to a Status answer.
	RetryAfter *int `json:"retryAfter,omitempty"`
	// RetryAfterRaw sends this Retry-After header verbatim (e.g. an
	// HTTP-date, which clients must treat as absent).
	RetryAfterRaw string `json:"retryAfterRaw,omitempty"`
	// Hang holds the request until the client gives up, HangMs elapse
	// (default 15000, at most 120000; then 504) or the broker drains.
	Hang   bool `json:"hang,omitempty"`
	HangMs int  `json:"hangMs,omitempty"`
	// Drop closes the connection without answering.
	Drop bool `json:"drop,omitempty"`
	// Count is how many requests the rule hits; 0 means until cleared.
	Count int `json:"count,omitempty"`
	// Hits counts requests the rule has answered (reported by GET).
	Hits int `json:"hits"`
}

// maxHang is the longest hangMs a rule may ask for.
const maxHang = 120 * time.Second

type faultSet struct {
	mu    sync.Mutex
	rules []*FaultRule
}

var faultRoutes = map[string]bool{
	routeQueues: true, routeConfigure: true, routeDelete: true, routePush: true, routeFetch: true,
	routeKV: true, routeTxn: true, routeAuthMe: true, routeGroups: true, routePop: true, routeAck: true, routeDLQ: true,
	"any": true,
}

func (r *FaultRule) check() error {
	if !faultRoutes[r.Route] {
		return fmt.Errorf("route %q: want queues, configure, delete, push, fetch, kv, transaction, authme, groups, pop, ack, dlq or any", r.Route)
	}
	actions := 0
	if r.Status != 0 {
		actions++
		if r.Status < 200 || r.Status > 599 {
			return fmt.Errorf("status %d out of range", r.Status)
		}
	}
	if r.Hang {
		actions++
	}
	if r.Drop {
		actions++
	}
	if actions != 1 {
		return fmt.Errorf("want exactly one of status, hang, drop")
	}
	if r.Count < 0 || r.HangMs < 0 || r.HangMs > int(maxHang/time.Millisecond) || (r.RetryAfter != nil && *r.RetryAfter < 0) {
		return fmt.Errorf("count, hangMs and retryAfter must be ≥ 0 (hangMs ≤ 120000)")
	}
	return nil
}

// take returns the first rule matching (route, token) and counts the hit.
func (s *faultSet) take(route, token string) *FaultRule {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, r := range s.rules {
		if (r.Route != route && r.Route != "any") || (r.Token != "" && r.Token != token) {
			continue
		}
		r.Hits++
		hit := *r
		if r.Count > 0 && r.Hits >= r.Count {
			s.rules = append(s.rules[:i:i], s.rules[i+1:]...)
		}
		return &hit
	}
	return nil
}

// handleFaults: POST replaces the rule list, DELETE clears it, GET lists it.
// Loopback callers only, and with auth on only an admin token: the rules
// apply to every tenant, so managing them is the broadest access there is.
func (b *Broker) handleFaults(w http.ResponseWriter, r *http.Request) {
	if !fromLoopback(r) {
		writeError(w, http.StatusForbidden, "fault injection is for loopback callers only")
		return
	}
	if _, ok := b.authenticate(w, r, RoleAdmin); !ok {
		return
	}
	switch r.Method {
	case http.MethodGet:
		b.faults.mu.Lock()
		rules := make([]FaultRule, len(b.faults.rules))
		for i, rule := range b.faults.rules {
			rules[i] = *rule
		}
		b.faults.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"rules": rules})
	case http.MethodDelete:
		b.faults.mu.Lock()
		b.faults.rules = nil
		b.faults.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"rules": 0})
	case http.MethodPost:
		var body struct {
			Rules []*FaultRule `json:"rules"`
		}
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
		if err := dec.Decode(&body); err != nil {
			badBody(w, err.Error())
			return
		}
		for i, rule := range body.Rules {
			if rule == nil {
				badBody(w, fmt.Sprintf("rule %d is null", i))
				return
			}
			if err := rule.check(); err != nil {
				badBody(w, fmt.Sprintf("rule %d: %v", i, err))
				return
			}
			rule.Hits = 0
		}
		b.faults.mu.Lock()
		b.faults.rules = body.Rules
		b.faults.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"rules": len(body.Rules)})
	default:
		writeError(w, http.StatusMethodNotAllowed, "use GET, POST or DELETE")
	}
}

// injectFault applies a matching rule; true means the request was handled.
func (b *Broker) injectFault(w http.ResponseWriter, r *http.Request, route string) bool {
	if !fromLoopback(r) {
		return false
	}
	rule := b.faults.take(route, bearer(r))
	if rule == nil {
		return false
	}
	drainBody(r)
	switch {
	case rule.Drop:
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return true
			}
		}
		panic(http.ErrAbortHandler)
	case rule.Hang:
		d := 15 * time.Second
		if rule.HangMs > 0 {
			d = time.Duration(rule.HangMs) * time.Millisecond
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-r.Context().Done():
			return true
		case <-b.closing:
		case <-t.C:
		}
		writeError(w, http.StatusGatewayTimeout, "upstream_timeout (injected hang)")
		return true
	}
	if rule.RetryAfterRaw != "" {
		w.Header().Set("Retry-After", rule.RetryAfterRaw)
	} else if rule.RetryAfter != nil {
		w.Header().Set("Retry-After", strconv.Itoa(*rule.RetryAfter))
	}
	code := faultCode(rule.Status)
	detail := "injected by queen-dev: " + http.StatusText(rule.Status)
	switch route {
	case routeKV:
		writeJSON(w, rule.Status, map[string]string{"error": code, "reason": code, "detail": detail})
	case routeTxn:
		writeJSON(w, rule.Status, map[string]any{"transactionId": newUUID(), "success": false, "reason": code, "error": detail, "results": []any{}})
	default:
		writeError(w, rule.Status, detail)
	}
	return true
}

// faultCode is the error code a real broker or gateway uses for status.
func faultCode(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "unauthorized"
	case http.StatusForbidden:
		return "forbidden"
	case http.StatusRequestEntityTooLarge:
		return "payload_too_large"
	case http.StatusTooManyRequests:
		return "rate_limited"
	case http.StatusServiceUnavailable:
		return "kv_unavailable"
	case http.StatusGatewayTimeout:
		return "upstream_timeout"
	case http.StatusBadGateway:
		return "bad_gateway"
	}
	if status >= 500 {
		return "kv_error"
	}
	return "injected"
}
