package registry

import (
	"context"
	"fmt"
	"time"

	"github.com/queen-mq/queen-kafka/queen"
)

// claim takes the node id at boot. Every look at the row is a put with
// expect 0, which writes only when the id is free and otherwise answers the
// current version and value, so watching costs no extra reads and the
// moment the row expires is the moment it is taken.
//
// A row already present is watched for one TTL plus one heartbeat. If its
// version moves, somebody is refreshing it: a second live facade with this
// id, which is a *ConflictError. If it expires, the id is free and taken. If
// it never moves, it is a dead predecessor's row (one that outlives our TTL,
// e.g. written with a longer one) and is adopted with expect = its version.
func (s *Session) claim(ctx context.Context) error {
	var (
		expect   int64
		seen     int64 // version first seen; 0 until a predecessor's row is met
		seenAt   time.Time
		deadline time.Time
		outage   bool
	)
	watch := s.cfg.TTL + s.cfg.Heartbeat
	for {
		sent := s.clk.Now()
		put, list, err := s.call(ctx, expect)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("registry: claiming node id %d: %w", s.cfg.NodeID, ctx.Err())
			}
			s.mu.Lock()
			s.beatsFailed++
			s.mu.Unlock()
			if !queen.Retriable(err) {
				return fmt.Errorf("registry: claiming node id %d at %s: %w", s.cfg.NodeID, s.key, err)
			}
			if !outage {
				outage = true
				s.log.Error("registry unreachable at boot: this node cannot join the cluster until it is reachable; retrying every heartbeat",
					"key", s.key, "err", err)
			}
			if err := s.sleep(ctx, s.cfg.Heartbeat); err != nil {
				return err
			}
			continue
		}
		if put.Applied {
			// The id is ours even if the first read of peers fails: the
			// session then starts unhealthy and the next heartbeat retries.
			s.applied(ctx, put, list, sent)
			s.log.Info("node id claimed", "key", s.key, "version", put.Version, "incarnation", s.cfg.Incarnation,
				"waited", s.clk.Now().Sub(firstNonZero(seenAt, sent)).Round(time.Millisecond))
			return nil
		}
		cur, own := s.holder(put)
		now := s.clk.Now()
		switch {
		case own:
			// Our own earlier claim whose answer was lost.
			expect = put.Version
			continue
		case put.Version == 0:
			// The row expired between the look and the adoption.
			expect = 0
			continue
		case seen == 0:
			seen, seenAt, deadline = put.Version, now, now.Add(watch)
			s.log.Warn("node id is held by an existing registry row; watching it before adopting the id",
				"key", s.key, "version", seen, "holder_incarnation", cur.Incarnation, "holder", cur.Addr(), "watch", watch)
		case put.Version != seen:
			return &ConflictError{
				Key: s.key, NodeID: s.cfg.NodeID, FirstVersion: seen, LastVersion: put.Version,
				Watched: now.Sub(seenAt), Holder: cur,
			}
		}
		if !now.Before(deadline) {
			// Static for the whole watch: a dead predecessor's row.
			expect = seen
			continue
		}
		expect = 0
		if err := s.sleep(ctx, min(s.cfg.Heartbeat, deadline.Sub(now))); err != nil {
			return err
		}
	}
}

func (s *Session) sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return fmt.Errorf("registry: claiming node id %d: %w", s.cfg.NodeID, ctx.Err())
	case <-s.clk.After(d):
		return nil
	}
}

func firstNonZero(a, b time.Time) time.Time {
	if !a.IsZero() {
		return a
	}
	return b
}
