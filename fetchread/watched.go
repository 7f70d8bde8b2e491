package fetchread

import (
	"context"
	"slices"
	"time"

	"github.com/queen-mq/queen-kafka/fetchsession"
	"github.com/queen-mq/queen-kafka/fetchwatch"
	"github.com/queen-mq/queen-kafka/queen"
)

// Part is a partition a watched fetch answers (or may): its place in the
// fetch, its key, and its slot.
type Part struct {
	Idx     int
	Key     fetchsession.Partition
	Slot    Slot
	read    bool // the slot was filled from Queen, not left unread
	learned bool // the watch has been told of this fill
}

// Watched is what one watched fetch has read: its fill, the watch round
// it tells what it answered, and the partitions it touched, by their place
// in the fetch. Which partitions it may read, and which of them its answer
// carries, are the caller's.
type Watched struct {
	Fill    *Fill
	Round   *fetchwatch.Round
	Touched map[int]*Part
	Refused bool // a partition carries an error: answer at once
}

// NewWatched is a watched fetch reading into f and learning into round.
func NewWatched(f *Fill, round *fetchwatch.Round) *Watched {
	return &Watched{Fill: f, Round: round, Touched: make(map[int]*Part)}
}

// Take answers tp from r, what a parked call (entry e) read of it from the
// fetch's offset. When tp holds the response's first record and Queen's
// budget stopped inside that record's push, it is read again through c for
// the push's whole length (Fill's first push).
func (w *Watched) Take(ctx context.Context, c Conn, tp *Part, e queen.FetchEntry, r *queen.FetchResult) {
	w.Fill.take(ctx, c, &tp.Slot, e, r)
	tp.read, tp.learned = true, false
	w.Refused = w.Refused || tp.Slot.Resp.ErrorCode != 0
}

// ReadParts reads tps (entries, one for one) the plain way (Fill.Read),
// waiting up to wait. failed answers the read's failure on their slots
// (nil when it did not fail); what it returns ends the read.
func (w *Watched) ReadParts(ctx context.Context, c Conn, tps []*Part, entries []queen.FetchEntry, wait time.Duration, minBytes int, failed func([]Slot, error) error) error {
	slots := make([]Slot, len(tps))
	for j, tp := range tps {
		slots[j] = tp.Slot
	}
	err := w.Fill.Read(ctx, c, slots, entries, wait, minBytes)
	if err := failed(slots, err); err != nil {
		return err
	}
	for j, tp := range tps {
		tp.Slot, tp.read, tp.learned = slots[j], true, false
	}
	w.Refused = w.Refused || slices.ContainsFunc(slots, func(s Slot) bool { return s.Resp.ErrorCode != 0 })
	return nil
}

// Learn tells the watch what the fetch answered of each partition it read:
// a partition answered up to its high watermark is cold there and parked;
// one answered an error, or not read at all, is read again.
func (w *Watched) Learn() {
	for _, tp := range w.Touched {
		if !tp.read || tp.learned {
			continue
		}
		tp.learned = true
		sp := tp.Slot.Resp
		if sp.ErrorCode == 0 && sp.HighWatermark < 0 {
			continue // the budget was spent before it was read
		}
		w.Round.Learn(&tp.Key, fetchwatch.Outcome{Next: tp.Slot.Next, HighWatermark: sp.HighWatermark, LogStartOffset: sp.LogStartOffset, Err: sp.ErrorCode != 0})
	}
}

// Gathered is the record bytes the response holds (min_bytes' measure).
func (w *Watched) Gathered() int {
	n := 0
	for _, tp := range w.Touched {
		n += len(tp.Slot.Resp.RecordBatches)
	}
	return n
}
