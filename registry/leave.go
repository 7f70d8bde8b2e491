package registry

import (
	"context"
	"fmt"
	"time"

	"github.com/queen-mq/queen-kafka/queen"
)

// leavePoll spaces Leave's reads of the peers' rows.
const leavePoll = 50 * time.Millisecond

// Leave is Close for a node that goes on serving while its peers catch up,
// as a Kafka broker's controlled shutdown moves its leaderships and
// coordinators before it closes its listener: it deletes the own row, then
// waits until every peer of the last view has read the live set without
// this node, and only then returns, so that the node stops listening when
// no peer names it any more. A peer has read it once its own row was
// rewritten after the delete (each heartbeat writes the own row and reads
// the live set in one call) or is gone. The wait ends early at ctx's end,
// and at the latest one heartbeat and a half after the delete (a peer's
// next heartbeat starts within one interval; a peer that never writes again
// is down): a cut wait is only the behaviour without it, peers naming this
// node until their next read. Waiting is skipped when the session cannot
// vouch for its membership (its peers are dropping it already) or the id
// was lost.
func (s *Session) Leave(ctx context.Context) error {
	vouched := s.Err() == nil
	peers := s.View().Nodes
	if err := s.Close(ctx); err != nil || !vouched {
		return err
	}
	deadline := s.clk.Now().Add(s.cfg.Heartbeat + s.cfg.Heartbeat/2)
	before, err := s.peerVersions(ctx)
	if err != nil {
		return fmt.Errorf("registry: row deleted, peers not watched: %w", err)
	}
	waiting := map[string]int64{}
	for _, p := range peers {
		key := queen.NodeKey(s.cfg.Cluster, int(p.ID))
		if v, ok := before[key]; ok && key != s.key {
			waiting[key] = v
		}
	}
	for len(waiting) > 0 {
		left := deadline.Sub(s.clk.Now())
		if left <= 0 {
			s.log.Info("stopping before every peer read the live set; they drop this node at their next read", "waiting_for", len(waiting))
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.clk.After(min(leavePoll, left)):
		}
		now, err := s.peerVersions(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("registry: row deleted, peers not watched: %w", err)
		}
		for key, v := range waiting {
			if cur, ok := now[key]; !ok || cur != v {
				delete(waiting, key)
			}
		}
	}
	s.log.Info("every peer has read the live set without this node")
	return nil
}

// peerVersions is the version of every row under the cluster's prefix.
func (s *Session) peerVersions(ctx context.Context) (map[string]int64, error) {
	callCtx, cancel := context.WithTimeout(ctx, s.cfg.callBudget())
	defer cancel()
	res, err := s.kv.KV(callCtx, []queen.KVOp{{Op: queen.OpGetPrefix, NS: queen.Namespace, Prefix: s.prefix, Limit: ListLimit}})
	if err != nil {
		return nil, err
	}
	if len(res) != 1 {
		return nil, fmt.Errorf("%d results for 1 op", len(res))
	}
	rows, err := s.rows(ctx, res[0])
	if err != nil {
		return nil, err
	}
	versions := make(map[string]int64, len(rows))
	for _, r := range rows {
		versions[r.Key] = r.Version
	}
	return versions, nil
}
