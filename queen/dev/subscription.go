package dev

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// A consumer group's subscription on a queue (queen-api-consume.md §2, §6):
// what the group's first pop there asked for, kept so that a partition the
// group meets later (created after the group subscribed, or whose cursor
// was deleted) is seeded from the same moment instead of from its end at
// that later contact. One row (kind s) per (queue, group), written by the
// first queue-form or discovery pop of a named group and never rewritten by
// a pop; POST …/{group}/subscription moves its timestamp.

// Stored modes, as the list view answers them: "all" (timestamp the
// epoch), "new" (subscriptionMode=new or subscriptionFrom=now: the
// registering pop's time), "timestamp" (subscriptionFrom=ISO).
const (
	subAll       = "all"
	subNew       = "new"
	subTimestamp = "timestamp"
)

type subscription struct {
	mode    string
	ts      int64 // unix µs; the epoch (0) for "all"
	created int64 // unix µs: when the registering pop ran
}

func keySub(qid, group string) []byte {
	return append(queuePrefix(kindSub, qid), group...)
}

func encodeSub(s *subscription) []byte {
	e := encoder{b: make([]byte, 0, 32)}
	e.str(s.mode)
	e.varint(s.ts)
	e.varint(s.created)
	return e.b
}

func decodeSub(v []byte) (*subscription, error) {
	d := &decoder{b: v}
	s := &subscription{mode: d.str(), ts: d.varint(), created: d.varint()}
	return s, d.err
}

// getSub reads a group's subscription on a queue as applied so far (nil if
// absent).
func (b *Broker) getSub(qid, group string) (*subscription, error) {
	v, closer, err := b.db.Get(keySub(qid, group))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	return decodeSub(v)
}

// newSub is the subscription a registering pop asks for.
func (p *popParams) newSub(now int64) *subscription {
	switch {
	case p.subFrom != 0:
		return &subscription{mode: subTimestamp, ts: p.subFrom, created: now}
	case p.subNew:
		return &subscription{mode: subNew, ts: now, created: now}
	}
	return &subscription{mode: subAll, created: now}
}

// seedCursor is the first cursor of a (partition, group) with no cursor:
// from the group's stored subscription on the queue when it has one
// (before the first record stored at or after its timestamp), else from
// the pop's own subscriptionMode/subscriptionFrom. A cursor is never
// re-seeded; this runs only when none exists.
func (b *Broker) seedCursor(q *queue, part *partition, p *popParams, sub *subscription) (*cursor, error) {
	cur := &cursor{committed: -1}
	var err error
	switch {
	case sub != nil && sub.ts > 0:
		cur.committed, err = b.firstAtOrAfter(q.id, part, sub.ts)
	case sub != nil: // "all": from the log start
	case p.subFrom != 0: // a timestamp wins over mode new, as in newSub
		cur.committed, err = b.firstAtOrAfter(q.id, part, p.subFrom)
	case p.subNew:
		cur.committed = part.hwm - 1
	}
	return cur, err
}

// registerSub is a group's first queue-form or discovery pop on q:
// it stores the subscription the pop asks for and seeds a cursor on every
// partition of q the group has none on, by the pop's mode (all: from the
// log start, new: from the end, timestamp: before the first record at or
// after it), so that the partitions the pop does not claim start where the
// group subscribed. seeded collects the cursors written, which the batch
// holds and the store does not show yet. The caller holds b.mu.
func (b *Broker) registerSub(batch *pebble.Batch, q *queue, p *popParams, now int64, seeded map[string]*cursor) (*subscription, error) {
	sub := p.newSub(now)
	batch.Set(keySub(q.id, p.group), encodeSub(sub), nil)
	for name, part := range q.parts {
		cur, err := b.getCursor(q.id, name, p.group)
		if err != nil || cur != nil {
			if err != nil {
				return nil, err
			}
			continue
		}
		// The registering pop's own intent seeds these, exactly: a "new"
		// group starts at each partition's end now, not at the first
		// record stamped at or after now.
		if cur, err = b.seedCursor(q, part, p, nil); err != nil {
			return nil, err
		}
		batch.Set(keyCursor(q.id, name, p.group), encodeCursor(cur), nil)
		seeded[q.id+"\x00"+name] = cur
	}
	return sub, nil
}

// subFields are a row's subscriptionMode, subscriptionTimestamp and
// subscriptionCreatedAt: nulls without a stored subscription.
func subFields(s *subscription) (mode, ts, created *string) {
	if s == nil {
		return nil, nil, nil
	}
	t, c := msTime(s.ts), msTime(s.created)
	return &s.mode, &t, &c
}

// handleSubscription serves POST /api/v1/consumer-groups/{group}/subscription
// {"subscriptionTimestamp":ISO}: every stored subscription of the group (one
// per queue it registered on) takes the new timestamp, which seeds the
// partitions the group meets from now on; cursors that exist are not moved
// (a seek moves them) and leases are untouched. The mode is kept. A group
// with no stored subscription is answered rowsUpdated 0, as Queen's UPDATE
// of no row is.
func (b *Broker) handleSubscription(w http.ResponseWriter, r *http.Request, c *call) {
	group := r.PathValue("group")
	var body struct {
		SubscriptionTimestamp *string `json:"subscriptionTimestamp"`
	}
	if err := json.Unmarshal(c.body, &body); err != nil {
		badBody(w, err.Error())
		return
	}
	if body.SubscriptionTimestamp == nil || *body.SubscriptionTimestamp == "" {
		writeError(w, http.StatusBadRequest, "subscriptionTimestamp is required")
		return
	}
	raw := *body.SubscriptionTimestamp
	ts, err := time.Parse(time.RFC3339Nano, raw)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "subscription failed: invalid timestamp "+raw)
		return
	}
	if !b.enter() {
		writeError(w, http.StatusInternalServerError, "subscription failed: "+errClosed.Error())
		return
	}
	defer b.leave()
	b.mu.Lock()
	batch := b.db.NewBatch()
	updated := 0
	for _, q := range b.st.tenant(c.tenant).queues {
		var sub *subscription
		if sub, err = b.getSub(q.id, group); err != nil {
			break
		}
		if sub == nil {
			continue
		}
		sub.ts = ts.UnixMicro()
		batch.Set(keySub(q.id, group), encodeSub(sub), nil)
		updated++
	}
	if err := b.applyUnlock(batch, err); err != nil {
		writeError(w, http.StatusInternalServerError, "subscription failed: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "consumerGroup": group, "newTimestamp": raw, "rowsUpdated": updated})
}
