package registry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queen-mq/queen-kafka/hashring"
	"github.com/queen-mq/queen-kafka/queen"
)

// maxPages bounds the extra getPrefix pages one heartbeat reads. A page
// holds every valid id, so more than one page means rows that are not node
// rows share the prefix; reading past a few is not worth a heartbeat.
const maxPages = 4

// unreachableLogEvery spaces the repeated error line of a long outage.
const unreachableLogEvery = time.Minute

// call is one heartbeat-shaped KV call: the own row written with expect and
// the live set read, in one atomic call so the read sees the write.
func (s *Session) call(ctx context.Context, expect int64) (put, list queen.KVResult, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.callBudget())
	defer cancel()
	ops := []queen.KVOp{
		{Op: queen.OpPut, NS: queen.Namespace, Key: s.key, Value: s.row, TTLSeconds: s.cfg.ttlSeconds(), Expect: &expect},
		{Op: queen.OpGetPrefix, NS: queen.Namespace, Prefix: s.prefix, Limit: ListLimit},
	}
	res, err := s.kv.KV(ctx, ops)
	if err != nil {
		return put, list, err
	}
	if len(res) != len(ops) {
		return put, list, fmt.Errorf("registry: %d results for %d ops", len(res), len(ops))
	}
	return res[0], res[1], nil
}

// rows returns every row of the live-set read, paging past a truncated first
// page. Truncated keys are unread, never absent, so a read that cannot be
// completed is an error rather than a smaller live set.
func (s *Session) rows(ctx context.Context, first queen.KVResult) ([]queen.KVRow, error) {
	rows := first.Rows
	page := first
	for range maxPages {
		if !page.Truncated {
			return rows, nil
		}
		if page.NextAfter == nil || *page.NextAfter == "" {
			return nil, errors.New("registry: truncated live-set page without a cursor")
		}
		ctx, cancel := context.WithTimeout(ctx, s.cfg.callBudget())
		res, err := s.kv.KV(ctx, []queen.KVOp{{Op: queen.OpGetPrefix, NS: queen.Namespace, Prefix: s.prefix, Limit: ListLimit, After: *page.NextAfter}})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("registry: reading live set past %q: %w", *page.NextAfter, err)
		}
		if len(res) != 1 {
			return nil, fmt.Errorf("registry: %d results for 1 op", len(res))
		}
		page = res[0]
		rows = append(rows, page.Rows...)
	}
	if page.Truncated {
		return nil, fmt.Errorf("registry: live set under %q exceeds %d pages; remove rows that are not node rows", s.prefix, maxPages+1)
	}
	return rows, nil
}

// run heartbeats every interval until ctx ends or the id is lost. The
// schedule is fixed-rate from each beat's start, so a slow call does not
// push every later beat back.
func (s *Session) run(ctx context.Context) {
	defer close(s.loopDone)
	s.mu.Lock()
	next := s.lastOK.Add(s.cfg.Heartbeat)
	s.mu.Unlock()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.clk.After(max(0, next.Sub(s.clk.Now()))):
		}
		next = s.clk.Now().Add(s.cfg.Heartbeat)
		if s.beat(ctx) {
			return
		}
	}
}

// beat is one heartbeat; it reports whether the id was lost.
func (s *Session) beat(ctx context.Context) (lost bool) {
	s.mu.Lock()
	expect := s.held
	s.mu.Unlock()
	// Up to three calls: a stale held version (our own write whose answer
	// was lost) and an expired row each cost one more; more than that is a
	// row that moves on every look, which is reported as a failed beat.
	for range 3 {
		sent := s.clk.Now()
		put, list, err := s.call(ctx, expect)
		if err != nil {
			s.failed(ctx, err)
			return false
		}
		if put.Applied {
			s.applied(ctx, put, list, sent)
			return false
		}
		cur, own := s.holder(put)
		switch {
		case own:
			// Our own write, whose answer never reached us.
			expect = put.Version
		case put.Version == 0:
			// Expired (or deleted) under us: the registry was out of reach
			// for longer than the TTL, so peers have already dropped this
			// node and moved its groups. Nobody holds the id; take it back.
			s.log.Warn("registry row expired under this node; re-acquiring it (peers dropped this node meanwhile and may have moved its groups)",
				"key", s.key, "held", expect)
			expect = 0
		default:
			s.loseID(expect, put.Version, cur)
			return true
		}
	}
	s.failed(ctx, fmt.Errorf("registry: row %s changed on every attempt of one heartbeat", s.key))
	return false
}

// applied records a put that took the row, then the live set read with it:
// the view is trusted again only if the whole live set could be read.
func (s *Session) applied(ctx context.Context, put, list queen.KVResult, sent time.Time) {
	s.mu.Lock()
	s.held = put.Version
	s.mu.Unlock()
	rows, err := s.rows(ctx, list)
	if err != nil {
		s.failed(ctx, err)
		return
	}
	s.succeeded(rows, sent)
}

func (s *Session) succeeded(rows []queen.KVRow, sent time.Time) {
	nodes, bad := parseRows(s.prefix, rows)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.beatsOK++
	for _, k := range bad {
		if !s.badRows[k] {
			s.badRows[k] = true
			s.log.Warn("registry row is not a valid node row; ignored", "key", k)
		}
	}
	s.lastOK = sent
	changed := !sameMembers(nodes, s.view.Nodes)
	if changed {
		ids := make([]int32, len(nodes))
		for i, n := range nodes {
			ids[i] = n.ID
		}
		s.view = View{Self: s.cfg.NodeID, Nodes: nodes, Ring: hashring.New(ids)}
		s.log.Info("live set changed", "nodes", ids)
	}
	if s.lastErr != nil {
		s.log.Info("registry reachable again; group RPCs are answered again", "outage", s.clk.Now().Sub(s.failedAt).Round(time.Millisecond))
		s.lastErr = nil
		changed = true
	}
	if changed {
		s.notifyLocked()
	}
}

func (s *Session) failed(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return // stopping: a canceled call is Close's doing, not an outage
	}
	now := s.clk.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.beatsFailed++
	if s.lastErr == nil {
		s.failedAt, s.loggedAt = now, now
		s.log.Error("registry unreachable: group RPCs answer COORDINATOR_NOT_AVAILABLE until the registry is reachable again; produce and fetch are unaffected",
			"key", s.key, "err", err)
		s.lastErr = err
		s.notifyLocked()
		return
	}
	s.lastErr = err
	if now.Sub(s.loggedAt) >= unreachableLogEvery {
		s.loggedAt = now
		s.log.Error("registry still unreachable: group RPCs answer COORDINATOR_NOT_AVAILABLE",
			"for", now.Sub(s.failedAt).Round(time.Second), "err", err)
	}
}

func (s *Session) loseID(held, found int64, holder Node) {
	lerr := &LostError{Key: s.key, NodeID: s.cfg.NodeID, HeldVersion: held, Version: found, Holder: holder}
	s.log.Error("NODE ID LOST: another facade process took this node id; this node no longer coordinates any group",
		"err", lerr.Error())
	s.mu.Lock()
	s.lost = lerr
	s.held = 0
	s.notifyLocked()
	s.mu.Unlock()
	s.finish()
}
