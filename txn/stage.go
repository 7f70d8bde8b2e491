package txn

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/queen-mq/queen-kafka/queen"
)

// Stage is where one transaction's records and offsets wait for EndTxn.
// The manager calls it under the transaction's lock, so an implementation
// need not lock for the manager; the caps are the manager's too (it counts
// what it hands over). Memory is single mode's; a stage held in Queen is
// what lets cluster mode commit at one node records produced through
// another.
type Stage interface {
	// AddRecords stages records of one partition after those staged
	// before; payloads are envelopes the stage must copy, since the
	// caller reuses their memory. keys (nil, or one per payload) are the
	// records' Queen transactionIds, pushed with them at the commit.
	AddRecords(ctx context.Context, topic string, partition int32, payloads []json.RawMessage, keys []string) error
	// SetOffset stages the write of one committed offset; a second write
	// of the same key replaces the first.
	SetOffset(ctx context.Context, key string, write queen.KVOp) error
	// Contents is everything staged: the records in staging order and the
	// offset writes in the order their keys were first set. The stage
	// keeps them: a commit that fails retriably is retried from it.
	Contents(ctx context.Context) ([]queen.PushItem, []queen.KVOp, error)
	// Drop discards everything staged; the stage is not used after.
	Drop()
}

// Stages opens the stage of each transaction the manager begins (or, in
// cluster mode, loads from its qk:txn: row): transaction ref of k, whose
// calls to Queen go through q.
type Stages interface {
	Open(k Key, ref Ref, q Queen) Stage
}

// Ref names one transaction of a transactional id: the producer id and
// epoch that hold it and its number (the qk:txn: row's seq+1 while open).
type Ref struct {
	PID   int64
	Epoch int16
	Txn   uint64
}

// Memory is the in-process stage: lost, as seed 001 says, with the process.
type Memory struct{}

// Open returns an empty in-memory stage.
func (Memory) Open(Key, Ref, Queen) Stage { return &memStage{} }

type memStage struct {
	items   []queen.PushItem
	offsets []queen.KVOp
	at      map[string]int // offset key → index in offsets
}

func (s *memStage) AddRecords(_ context.Context, topic string, partition int32, payloads []json.RawMessage, keys []string) error {
	// One arena per call: a batch costs one allocation, not one per record.
	n := 0
	for _, p := range payloads {
		n += len(p)
	}
	arena := make([]byte, 0, n)
	part := strconv.FormatInt(int64(partition), 10)
	for i, p := range payloads {
		from := len(arena)
		arena = append(arena, p...)
		it := queen.PushItem{Queue: topic, Partition: part, Payload: arena[from:len(arena):len(arena)]}
		if keys != nil {
			it.TransactionID = keys[i] // a substring of one string the stage may keep
		}
		s.items = append(s.items, it)
	}
	return nil
}

func (s *memStage) SetOffset(_ context.Context, key string, write queen.KVOp) error {
	if i, ok := s.at[key]; ok {
		s.offsets[i] = write
		return nil
	}
	if s.at == nil {
		s.at = make(map[string]int)
	}
	s.at[key] = len(s.offsets)
	s.offsets = append(s.offsets, write)
	return nil
}

func (s *memStage) Contents(context.Context) ([]queen.PushItem, []queen.KVOp, error) {
	return s.items, s.offsets, nil
}

func (s *memStage) Drop() { *s = memStage{} }
