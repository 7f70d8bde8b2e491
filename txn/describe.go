package txn

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen"
)

// Kafka's transaction states, as ListTransactions and
// DescribeTransactions name them (TransactionState.name).
const (
	kafkaEmpty          = "Empty"
	kafkaOngoing        = "Ongoing"
	kafkaPrepareCommit  = "PrepareCommit"
	kafkaPrepareAbort   = "PrepareAbort"
	kafkaCompleteCommit = "CompleteCommit"
	kafkaCompleteAbort  = "CompleteAbort"
)

var kafkaStates = []string{kafkaEmpty, kafkaOngoing, kafkaPrepareCommit, kafkaPrepareAbort, kafkaCompleteCommit, kafkaCompleteAbort}

// view is one transactional id as the admin APIs show it.
type view struct {
	id         string
	pid        int64
	epoch      int16
	state      string
	timeoutMs  int32
	startMs    int64 // -1 when no transaction is open
	partitions map[string][]int32
}

// stateOf names a binding's state as Kafka would: a commit in doubt is
// PrepareCommit, a transaction that can only abort (a cap, its timeout)
// PrepareAbort, a decided one Complete*.
func (t *binding) kafkaState() string {
	switch t.state {
	case stateOngoing:
		return kafkaOngoing
	case stateCommitting:
		return kafkaPrepareCommit
	case stateAbortable:
		return kafkaPrepareAbort
	}
	switch t.last {
	case outcomeCommitted:
		return kafkaCompleteCommit
	case outcomeAborted:
		return kafkaCompleteAbort
	}
	return kafkaEmpty
}

// rowState names a qk:txn: row's state as Kafka would; an open
// transaction past its deadline can only abort.
func rowState(mk marker, now time.Time) string {
	switch mk.State {
	case rowOngoing:
		if mk.TimeoutMs > 0 && now.After(time.UnixMilli(mk.Begin).Add(time.Duration(mk.TimeoutMs)*time.Millisecond)) {
			return kafkaPrepareAbort
		}
		return kafkaOngoing
	case rowCommitted:
		return kafkaCompleteCommit
	case rowAborted:
		return kafkaCompleteAbort
	}
	return kafkaEmpty
}

// heldView is t's view (t locked).
func (t *binding) view() view {
	v := view{id: t.key.ID, pid: t.pid, epoch: t.epoch, state: t.kafkaState(), timeoutMs: int32(t.timeout.Milliseconds()), startMs: -1}
	if t.holds() || t.state == stateAbortable {
		v.startMs = t.begun.UnixMilli()
	}
	for tp := range t.partitions {
		if v.partitions == nil {
			v.partitions = make(map[string][]int32)
		}
		v.partitions[tp.topic] = append(v.partitions[tp.topic], tp.partition)
	}
	return v
}

// rowView is the view of a qk:txn: row.
func rowView(id string, mk marker, now time.Time) view {
	v := view{id: id, pid: mk.PID, epoch: mk.Epoch, state: rowState(mk, now), timeoutMs: int32(mk.TimeoutMs), startMs: -1}
	if mk.State == rowOngoing {
		v.startMs = mk.Begin
	}
	return v
}

// views is every transactional id of cl's identity: in single mode those
// the process holds, in cluster mode every qk:txn: row cl's credential
// reads (one getPrefix per page), whichever node owns it.
func (m *Manager) views(ctx context.Context, cl Client) ([]view, error) {
	if !m.cfg.Cluster {
		m.mu.Lock()
		held := make([]*binding, 0, len(m.txns))
		for k, t := range m.txns {
			if k.Identity == cl.Identity {
				held = append(held, t)
			}
		}
		m.mu.Unlock()
		out := make([]view, 0, len(held))
		for _, t := range held {
			t.mu.Lock()
			if t.bound && !t.removed {
				out = append(out, t.view())
			}
			t.mu.Unlock()
		}
		return out, nil
	}
	now := m.clock.Now()
	var out []view
	after := ""
	for {
		res, err := m.kv(cl).KV(ctx, []queen.KVOp{{Op: queen.OpGetPrefix, NS: queen.Namespace, Prefix: queen.PrefixTxn, Limit: listPage, After: after}})
		if err != nil {
			return nil, err
		}
		r := res[0]
		for _, row := range r.Rows {
			id, ok := queen.Unesc(strings.TrimPrefix(row.Key, queen.PrefixTxn))
			mk, valid := readMarker(row.Value)
			if ok && valid {
				out = append(out, rowView(id, mk, now))
			}
		}
		if !r.Truncated {
			return out, nil
		}
		var ok bool
		if after, ok = r.NextCursor(after); !ok {
			return nil, fmt.Errorf("listing %s: a truncated page without a cursor", queen.PrefixTxn)
		}
	}
}

// listPage is the qk:txn: rows one getPrefix reads: rows of about 200
// bytes, well inside the route's read budget.
const listPage = 500

// ListTransactions answers a ListTransactions v0–v2 with Kafka's filters
// (TransactionStateManager.listTransactionStates): states (an unknown
// name is listed back, and a filter of only unknown names matches
// nothing), producer ids, v1's duration (transactions open longer than
// it) and v2's transactional id pattern (a regular expression the whole
// id must match; one that does not compile is INVALID_REGULAR_EXPRESSION).
// Single mode lists the ids the process holds; cluster mode every node
// lists the whole fleet's, from the qk:txn: rows.
func (m *Manager) ListTransactions(ctx context.Context, cl Client, req *kmsg.ListTransactionsRequest) *kmsg.ListTransactionsResponse {
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	states := map[string]bool{}
	for _, s := range req.StateFilters {
		if slices.Contains(kafkaStates, s) {
			states[s] = true
		} else {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, s)
		}
	}
	var pattern *regexp.Regexp
	if req.Version >= 2 && req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
		var err error
		if pattern, err = regexp.Compile(`^(?:` + *req.TransactionalIDPattern + `)$`); err != nil {
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			return resp
		}
	}
	all, err := m.views(ctx, cl)
	if err != nil {
		m.log.Warn("ListTransactions: the qk:txn: rows could not be read", "err", err)
		resp.ErrorCode = m.fault(err)
		return resp
	}
	now := m.now()
	for _, v := range all {
		switch {
		case len(req.ProducerIDFilters) > 0 && !slices.Contains(req.ProducerIDFilters, v.pid):
		case len(req.StateFilters) > 0 && !states[v.state]:
		case req.Version >= 1 && req.DurationFilterMillis >= 0 && (v.startMs < 0 || now-v.startMs <= req.DurationFilterMillis):
		case pattern != nil && !pattern.MatchString(v.id):
		default:
			st := kmsg.NewListTransactionsResponseTransactionState()
			st.TransactionalID, st.ProducerID, st.TransactionState = v.id, v.pid, v.state
			resp.TransactionStates = append(resp.TransactionStates, st)
		}
	}
	slices.SortFunc(resp.TransactionStates, func(a, b kmsg.ListTransactionsResponseTransactionState) int {
		return strings.Compare(a.TransactionalID, b.TransactionalID)
	})
	return resp
}

// DescribeTransactions answers a DescribeTransactions v0: each id's
// producer id and epoch, Kafka's state, timeout, start (-1 with no
// transaction open) and the partitions of its open transaction;
// TRANSACTIONAL_ID_NOT_FOUND for an id with no producer, INVALID_REQUEST
// for "". Any node answers (Kafka answers only at the coordinator): in
// cluster mode from the id's qk:txn: row, the partitions being those the
// stage holds records of (a getPrefix of its keys) and those this node, if
// it is the owner, had added.
func (m *Manager) DescribeTransactions(ctx context.Context, cl Client, req *kmsg.DescribeTransactionsRequest) *kmsg.DescribeTransactionsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID = id
		v, code := m.describe(ctx, cl, id)
		st.ErrorCode = code
		if code == 0 {
			st.State, st.TimeoutMillis, st.StartTimestamp = v.state, v.timeoutMs, v.startMs
			st.ProducerID, st.ProducerEpoch = v.pid, v.epoch
			topics := make([]string, 0, len(v.partitions))
			for topic := range v.partitions {
				topics = append(topics, topic)
			}
			slices.Sort(topics)
			for _, topic := range topics {
				tt := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
				tt.Topic = topic
				tt.Partitions = slices.Compact(slices.Sorted(slices.Values(v.partitions[topic])))
				st.Topics = append(st.Topics, tt)
			}
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp
}

func (m *Manager) describe(ctx context.Context, cl Client, id string) (view, int16) {
	if id == "" {
		return view{}, kerr.InvalidRequest.Code
	}
	k := Key{Identity: cl.Identity, ID: id}
	var local *view
	if t, _ := m.lock(k, false); t != nil {
		if t.bound {
			v := t.view()
			local = &v
		}
		t.mu.Unlock()
	}
	if !m.cfg.Cluster {
		if local == nil {
			return view{}, kerr.TransactionalIDNotFound.Code
		}
		return *local, 0
	}
	if len(queen.TxnKey(id)) > queen.MaxKeyBytes {
		return view{}, kerr.TransactionalIDNotFound.Code
	}
	res, err := m.kv(cl).KV(ctx, []queen.KVOp{rowOp(id)})
	if err != nil {
		m.log.Warn("DescribeTransactions: the qk:txn: row could not be read", "transactional_id", id, "err", err)
		return view{}, m.fault(err)
	}
	if res[0].Truncated {
		return view{}, kerr.CoordinatorNotAvailable.Code
	}
	if len(res[0].Rows) == 0 {
		return view{}, kerr.TransactionalIDNotFound.Code
	}
	mk, ok := readMarker(res[0].Rows[0].Value)
	if !ok {
		return view{}, kerr.TransactionalIDNotFound.Code
	}
	v := rowView(id, mk, m.clock.Now())
	if mk.State != rowOngoing {
		return v, 0
	}
	if local != nil && local.pid == v.pid && local.epoch == v.epoch {
		v.partitions = local.partitions
	}
	parts, err := m.stagedPartitions(ctx, cl, queen.TxnStagePrefix(id, mk.PID, mk.Epoch, mk.Seq+1))
	if err != nil {
		m.log.Warn("DescribeTransactions: the stage could not be read", "transactional_id", id, "err", err)
		return view{}, m.fault(err)
	}
	for topic, ps := range parts {
		if v.partitions == nil {
			v.partitions = make(map[string][]int32)
		}
		v.partitions[topic] = append(v.partitions[topic], ps...)
	}
	return v, 0
}

// stagedPartitions is the partitions an open transaction's stage holds
// records of, from its r: keys (r:<esc topic>:<partition>:<seq>:<chunk>).
func (m *Manager) stagedPartitions(ctx context.Context, cl Client, prefix string) (map[string][]int32, error) {
	out := map[string][]int32{}
	after := ""
	for {
		res, err := m.kv(cl).KV(ctx, []queen.KVOp{{Op: queen.OpGetPrefix, NS: queen.Namespace, Prefix: prefix + "r:", Limit: listPage, After: after, KeysOnly: true}})
		if err != nil {
			return nil, err
		}
		r := res[0]
		for _, row := range r.Rows {
			f := strings.Split(strings.TrimPrefix(row.Key, prefix+"r:"), ":")
			if len(f) < 2 {
				continue
			}
			topic, ok := queen.Unesc(f[0])
			p, err := strconv.ParseInt(f[1], 10, 32)
			if ok && err == nil {
				out[topic] = append(out[topic], int32(p))
			}
		}
		if !r.Truncated {
			return out, nil
		}
		var ok bool
		if after, ok = r.NextCursor(after); !ok {
			return nil, fmt.Errorf("reading %s: a truncated page without a cursor", prefix)
		}
	}
}
