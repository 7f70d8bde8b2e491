package txn

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// state is where a bound transactional id's current transaction is.
type state int

const (
	// stateEmpty: no transaction open (after InitProducerId, and after
	// every decided one).
	stateEmpty state = iota
	// stateOngoing: opened by its first AddPartitionsToTxn or
	// AddOffsetsToTxn; its deadline runs.
	stateOngoing
	// stateCommitting: a commit was sent and its outcome is not known
	// (the call failed retriably); the stage is kept, and only a retried
	// EndTxn(commit) is served.
	stateCommitting
	// stateAbortable: a cap or the deadline took the transaction's stage,
	// or part of it; the producer must abort. A commit is
	// INVALID_TXN_STATE, an abort is answered 0 and empties the binding.
	stateAbortable
)

func (s state) String() string {
	switch s {
	case stateEmpty:
		return "Empty"
	case stateOngoing:
		return "Ongoing"
	case stateCommitting:
		return "Committing"
	case stateAbortable:
		return "Abortable"
	}
	return fmt.Sprintf("state(%d)", int(s))
}

// outcome is how the binding's last transaction was decided.
type outcome int

const (
	outcomeNone outcome = iota
	outcomeCommitted
	outcomeAborted
)

type topicPartition struct {
	topic     string
	partition int32
}

// binding is one transactional id as this process holds it.
type binding struct {
	key Key
	mu  sync.Mutex

	// Guarded by Manager.mu: the connection that last used the binding,
	// and when it closed (zero while open). removed is set under both
	// locks, when the binding leaves the map.
	owner    uint64
	orphaned time.Time
	removed  bool

	// Guarded by mu. bound is false until a claim wins; version is the
	// qk:txn: row version last written, what the next write expects.
	bound      bool
	pid        int64
	epoch      int16
	bumpedFrom int16 // the epoch the last claim moved this producer id from, -1 none
	version    int64
	seq        uint64 // transactions decided under this id, as the row records
	// fenced: a commit found the row moved by another process; every
	// request of the epoch held is PRODUCER_FENCED.
	fenced  bool
	timeout time.Duration
	// KIP-890 (EndTxn v5): the producer id and epoch the last decision
	// moved from (-1 none), so that its retry is answered what it granted;
	// next is the id and epoch a decision under way moves to, fixed at
	// its first attempt so that a retried commit writes the same row.
	fromPID   int64
	fromEpoch int16
	next      *bump

	state    state
	last     outcome
	begun    time.Time // when the transaction opened (cluster mode's row says it)
	deadline time.Time
	stage    Stage
	// What the stage holds, counted for the caps.
	partitions map[topicPartition]bool
	groups     map[string]*txnGroup
	offsetKeys map[string]bool
	records    int
	bytes      int64
	body       int64 // what the staged records add to the commit body
	offsets    int
	// The old protocol's guard against a late EndTxn (EndTxn v0–v4
	// names no transaction): the connections that took part in the open
	// transaction, and the newest connection the process had seen when
	// it opened. A connection older than that which took no part sent
	// its EndTxn for an earlier transaction (lateEnd).
	parts     map[uint64]bool
	watermark uint64
}

// bump is the producer id and epoch a KIP-890 decision moves to.
type bump struct {
	pid   int64
	epoch int16
}

// txnGroup is one consumer group a transaction commits offsets for.
type txnGroup struct {
	protocolType string
	offsets      int
}

func newBinding(k Key) *binding { return &binding{key: k, bumpedFrom: -1, fromPID: -1, fromEpoch: -1} }

// holds reports a transaction whose stage a commit could still land.
func (t *binding) holds() bool { return t.state == stateOngoing || t.state == stateCommitting }

// clear empties the transaction's bookkeeping (the stage is the
// manager's to drop).
func (t *binding) clear() {
	t.partitions, t.groups, t.offsetKeys = nil, nil, nil
	t.records, t.bytes, t.body, t.offsets = 0, 0, 0, 0
	t.parts, t.watermark = nil, 0
}

// indexOps is how many group index rows the commit carries: one per group
// that has offsets staged.
func (t *binding) indexOps() int {
	n := 0
	for _, g := range t.groups {
		if g.offsets > 0 {
			n++
		}
	}
	return n
}

// expire applies the deadline: a transaction past it loses its stage and
// becomes abortable. It reports whether it did.
func (t *binding) expire(m *Manager, now time.Time) bool {
	if !t.holds() || now.Before(t.deadline) {
		return false
	}
	m.log.Info("transaction expired past its timeout; its stage was dropped", "transactional_id", t.key.ID, "producer_id", t.pid, "epoch", t.epoch, "records", t.records, "timeout", t.timeout)
	m.release(t)
	t.state = stateAbortable
	return true
}

// Codes for a request's producer id and epoch that are not the binding's.
// KIP-588 gave PRODUCER_FENCED its own code; a client below the version
// that knows it is told INVALID_PRODUCER_EPOCH.
func fencedCode(knowsFenced bool) int16 {
	if knowsFenced {
		return kerr.ProducerFenced.Code
	}
	return kerr.InvalidProducerEpoch.Code
}

// check compares a request's producer id and epoch with the binding's: an
// older epoch is fenced, one this process never granted is
// INVALID_PRODUCER_EPOCH, another producer id INVALID_PRODUCER_ID_MAPPING.
func (t *binding) check(pid int64, epoch int16, fenced int16) int16 {
	switch {
	case !t.bound:
		return kerr.InvalidTxnState.Code
	case pid != t.pid:
		return kerr.InvalidProducerIDMapping.Code
	case epoch < t.epoch || t.fenced:
		return fenced
	case epoch > t.epoch:
		return kerr.InvalidProducerEpoch.Code
	}
	return 0
}

// marker is the value of qk:txn:<id> (§10).
type marker struct {
	PID         int64  `json:"pid"`
	Epoch       int16  `json:"epoch"`
	State       string `json:"state"`
	Seq         uint64 `json:"seq"`
	Node        int32  `json:"node"`
	Incarnation string `json:"incarnation"`
	TS          int64  `json:"ts"`
	// Cluster mode only: the transaction timeout, and (state "ongoing")
	// when the open transaction began, both in ms, so that any node can
	// tell a transaction's deadline from the row.
	TimeoutMs int64 `json:"timeoutMs,omitempty"`
	Begin     int64 `json:"begin,omitempty"`
	// Bumped: a KIP-890 decision (EndTxn v5) moved the producer from
	// FromPID at FromEpoch to this row's id and epoch, so that any node
	// answers that decision's retry.
	Bumped    bool  `json:"bumped,omitempty"`
	FromPID   int64 `json:"fromPid,omitempty"`
	FromEpoch int16 `json:"fromEpoch,omitempty"`
}

// Row states (§10).
const (
	rowOpen      = "open"
	rowOngoing   = "ongoing" // cluster mode: transaction seq+1 is open
	rowCommitted = "committed"
	rowAborted   = "aborted"
)

func (mk marker) json() json.RawMessage {
	b, err := json.Marshal(mk)
	if err != nil {
		panic(fmt.Sprintf("txn: encoding the marker: %v", err)) // a plain struct always encodes
	}
	return b
}

// readMarker reads a stored row; ok is false for a value that is not one.
func readMarker(raw []byte) (mk marker, ok bool) {
	var v struct {
		PID         *int64 `json:"pid"`
		Epoch       *int16 `json:"epoch"`
		State       string `json:"state"`
		Seq         uint64 `json:"seq"`
		Node        int32  `json:"node"`
		Incarnation string `json:"incarnation"`
		TimeoutMs   int64  `json:"timeoutMs"`
		Begin       int64  `json:"begin"`
		Bumped      bool   `json:"bumped"`
		FromPID     int64  `json:"fromPid"`
		FromEpoch   int16  `json:"fromEpoch"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil || v.PID == nil || v.Epoch == nil || *v.PID < 0 || *v.Epoch < 0 {
		return marker{}, false
	}
	return marker{PID: *v.PID, Epoch: *v.Epoch, State: v.State, Seq: v.Seq, Node: v.Node, Incarnation: v.Incarnation, TimeoutMs: v.TimeoutMs, Begin: v.Begin, Bumped: v.Bumped, FromPID: v.FromPID, FromEpoch: v.FromEpoch}, true
}
