package dev

import (
	"sort"
	"time"
)

func (b *Broker) sweepLoop(interval time.Duration) {
	defer close(b.sweepDone)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-b.sweepStop:
			return
		case <-t.C:
			b.Sweep()
		}
	}
}

// Sweep runs one background pass now: retention raises log starts of
// queues with retentionEnabled and retentionSeconds ≥ 1 past records older
// than that (offsets are never renumbered), expired KV rows are removed, and
// dedup entries older than their queue's window are forgotten. Only the log
// start changes are logged: expiry and dedup age are recomputed from logged
// timestamps on replay.
func (b *Broker) Sweep() {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now().UnixMicro()
	var ops []op
	for tn, t := range b.st.tenants {
		for _, q := range t.queues {
			enabled, age := q.opts.retention()
			window := q.opts.dedupWindow()
			for _, p := range q.parts {
				if enabled && age >= 1e6 {
					cutoff := now - age
					// Records are in commit-time order, so the expired ones
					// are a prefix.
					n := sort.Search(len(p.recs), func(i int) bool { return p.recs[i].ts >= cutoff })
					if n > 0 {
						ops = append(ops, &opLogStart{tenant: tn, queue: q.name, part: p.name, lso: p.base + int64(n)})
					}
				}
				for tx, e := range p.dedup {
					if window <= 0 || now-e.ts >= window {
						delete(p.dedup, tx)
					}
				}
			}
		}
		for _, sp := range t.kv {
			for k, row := range sp.rows {
				if !row.live(now) {
					sp.set(k, nil)
				}
			}
		}
	}
	if len(ops) > 0 {
		// Nobody waits for this batch: a lost sweep is redone after a restart.
		_, _ = b.commit(ops)
	}
}
