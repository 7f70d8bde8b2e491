package recordbatch

import (
	"context"
	"errors"
	"sync"
	"unsafe"

	"github.com/queen-mq/queen-kafka/budget"
)

// Limits are the ceilings a Pool decodes under, given by the caller (the
// package knows no configuration of its own).
type Limits struct {
	// Frame is the largest request frame. One produce request's batches
	// may decompress to one frame's worth together (operator page,
	// "Decompressed produce batch"), so that compression buys a client no
	// more room than an uncompressed frame would have; its records may
	// cost one frame's worth once decoded (their envelopes and their
	// overhead each), so that a million empty records in a few hundred
	// compressed KiB buy no more than a frame of records would; and what
	// it holds at once, its decompressed batch, the decompressor's history
	// and its records' cost, is one frame's worth too. A request within it
	// makes a push body within one frame, past which Queen's own body
	// ceiling (64 MiB by default) refuses it anyway.
	Frame int
	// ItemOverhead is what the caller's item for a record costs beyond
	// its envelope and its topic name: for the facade its queen.PushItem
	// and that item's framing in the push body.
	ItemOverhead int
}

// Pool is the process's produce-side decoding: its ceilings, its pooled
// decoders and decompressors, and the decode budget every decoder's claim
// is paid on. Every produce request of the process decodes from one Pool,
// so that a thousand connections sending bombs cost what one does.
type Pool struct {
	maxDecompressed int
	maxRecordCost   int
	recordOverhead  int
	budget          *budget.Budget
	codecs          decompressors
	decoders        sync.Pool // *Decoder
}

// NewPool returns a Pool decoding under l. Its budget is what every
// request decoding from it may hold at once in decompressed records, in
// the decompressor's history and in the envelopes and items made from
// them. One request may hold a frame's worth of all three together
// (maxDecoded): the budget is exactly one such request, so the worst
// request is never refused for want of room, and ordinary requests, a few
// hundred KiB each, share it without waiting. (minDecodeBuffer covers a
// pooled buffer's capacity and the refusal's one byte past the ceiling.)
// Each alone could take a frame's worth before, twice a frame together:
// twelve bombs then kept two frames of the budget live, and the collector
// let the heap grow to twice that (issue 20: 451-566 MiB peak).
func NewPool(l Limits) *Pool {
	p := &Pool{
		maxDecompressed: l.Frame,
		maxRecordCost:   l.Frame,
		// A record's end in the ends index, then the caller's item.
		recordOverhead: int(unsafe.Sizeof(int(0))) + l.ItemOverhead,
		budget:         budget.New(int64(l.Frame + minDecodeBuffer)),
	}
	p.codecs.maxDecompressed = l.Frame
	p.decoders.New = func() any { return &Decoder{pool: p} }
	return p
}

// Get takes a decoder whose claim is paid on the pool's budget.
func (p *Pool) Get() *Decoder { return p.GetFor("") }

// GetFor is Get for owner (the facade's connection identity): when the
// budget is contended, the claims of one owner wait their turn with every
// other owner's, so that one tenant flooding produce does not starve
// another's requests (budget.Budget).
func (p *Pool) GetFor(owner string) *Decoder {
	d := p.decoders.Get().(*Decoder)
	d.own.budget, d.own.owner = p.budget, owner
	d.claim = &d.own
	return d
}

// Budget is the decode budget every decoder of the pool is paid on.
func (p *Pool) Budget() *budget.Budget { return p.budget }

// minClaimStep is the least a claim takes from the budget at a time, so
// that a request of many small records does not lock the budget per record.
const minClaimStep = 256 << 10

// errBudgetBusy is a claim that could not grow without waiting. Nothing
// waits while holding budget: the request gives back what it holds and
// waits with empty hands (Decoder.Restart), so claims cannot deadlock.
var errBudgetBusy = errors.New("decode budget busy")

// decodeClaim is one decoder's hold on the budget: the decompression
// buffer's capacity (scratch) and the record cost of its requests
// (records), paid for as they grow. A claim never waits while it holds
// anything.
type decodeClaim struct {
	budget  *budget.Budget
	owner   string // whose turn a wait takes (budget.Budget.AcquireAs)
	held    int64
	scratch int64
	records int64
	// window is what the batch being decoded holds in its decompressor
	// (a zstd window, lz4 block buffers), for that batch only.
	window int64
	// reached is the most the claim has asked to cover, refused or not:
	// a refused batch takes its record cost back, and a restart sized by
	// what is left would be refused at the same record again.
	reached int64
	// base is records as the request being decoded began (StartRequest):
	// a coalesced group's claim carries the requests before it, which its
	// own ceiling does not count.
	base int64
}

// errDecodedTooLarge is a request whose decompressed batch, decompressor
// history and record cost together would pass the budget, which is one
// such request's ceiling (NewPool).
var errDecodedTooLarge = errors.New("decoded request exceeds one frame")

// cover takes from the budget, without waiting, what the claim's use
// exceeds its hold by (in geometric steps, to keep the lock cold).
func (c *decodeClaim) cover() error {
	use := c.scratch + c.records + c.window
	c.reached = max(c.reached, use)
	if use-c.base > c.budget.Size() {
		return errDecodedTooLarge
	}
	if use <= c.held {
		return nil
	}
	if use > c.budget.Size() {
		// Only a coalesced group gets here (one request's ceilings fit
		// the budget, so a claim holding all of it never grows): busy
		// stops the group before this request.
		return errBudgetBusy
	}
	step := min(max(use-c.held, c.held/2, minClaimStep), c.budget.Size()-c.held)
	if c.held+step < use || !c.budget.TryAcquire(step) {
		return errBudgetBusy
	}
	c.held += step
	return nil
}

// payScratch records the decompression buffer growing to capacity n.
func (c *decodeClaim) payScratch(n int) error {
	if int64(n) <= c.scratch {
		return nil
	}
	prev := c.scratch
	c.scratch = int64(n)
	err := c.cover()
	if err == errDecodedTooLarge {
		c.scratch = prev // refused: the buffer does not grow
	}
	return err
}

// payWindow records the decompressor of the batch being decoded holding n
// bytes (history, block buffers); the next batch's payWindow replaces it.
func (c *decodeClaim) payWindow(n int) error {
	c.window = int64(n)
	return c.cover()
}

// payRecords adds n bytes of record cost.
func (c *decodeClaim) payRecords(n int) error {
	c.records += int64(n)
	return c.cover()
}

// restart gives back everything after a busy claim and waits, holding
// nothing, until the budget can give what the claim had reached and as much
// again (so that a request contended more than once waits at most a few
// times), then starts the claim over with that hold.
func (c *decodeClaim) restart(ctx context.Context) error {
	if c.held == c.budget.Size() {
		// One request's ceilings fit the budget, so this is a claim
		// counted wrong; retrying would never end.
		return errors.New("decode claim outgrew the whole budget")
	}
	want := min(max(2*c.reached, minClaimStep), c.budget.Size())
	c.release()
	if err := c.budget.AcquireAs(ctx, c.owner, want); err != nil {
		return err
	}
	c.held = want
	return nil
}

// release returns the claim's hold; the claim may be used again.
func (c *decodeClaim) release() {
	if c.held > 0 {
		c.budget.Release(c.held)
	}
	c.held, c.scratch, c.records, c.window, c.reached, c.base = 0, 0, 0, 0, 0, 0
}
