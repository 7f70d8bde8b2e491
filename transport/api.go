package transport

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Handler answers the requests of one API: a Single or a *Batch. Every
// request enters its handler through dispatch, whichever it is.
type Handler interface{ handler() }

// Single answers one decoded request. A nil response sends no frame; an
// error closes the connection with a log line.
type Single func(ctx context.Context, c *Conn, req kmsg.Request) (kmsg.Response, error)

func (Single) handler() {}

// Handle adapts a handler typed on its request, e.g. a
// func(context.Context, *Conn, *kmsg.MetadataRequest).
func Handle[T kmsg.Request](fn func(context.Context, *Conn, T) (kmsg.Response, error)) Single {
	return func(ctx context.Context, c *Conn, r kmsg.Request) (kmsg.Response, error) {
		return fn(ctx, c, r.(T))
	}
}

// Batch answers the requests of its API already read and waiting on one
// connection together, and owns its grouping policy: the bounds of a
// group, which of the group it answers now, and what each answer is owed.
type Batch struct {
	// MaxRequests and MaxBytes bound a group: the requests of this API
	// read and waiting right behind the first (nothing is waited for)
	// join it while the group holds fewer than MaxRequests and its frames
	// stay within MaxBytes. The first always joins; a request of another
	// API, or past the bounds, waits for its own turn.
	MaxRequests int
	MaxBytes    int64
	// Answer runs reqs, in arrival order, and returns the whole answers of
	// the first taken (at least one); the rest wait for a later group.
	Answer func(ctx context.Context, c *Conn, reqs []kmsg.Request) (resps []kmsg.Response, taken int, err error)
	// Owed is the frame req's whole answer is owed: resp, or nil for none
	// (the answer is observed all the same). Nil: every answer is owed.
	Owed func(c *Conn, req kmsg.Request, resp kmsg.Response) kmsg.Response
	// Recycle says nothing of a request outlives its answer, so its frame
	// goes back to the pool once answered.
	Recycle bool
}

func (*Batch) handler() {}

// Row is one row of the version table: the window advertised in
// ApiVersions and enforced on every request, and the handler behind it.
type Row struct {
	Key      int16
	Min, Max int16
	Handler  Handler
	// Why says where the window ends and why, for the README's support
	// matrix.
	Why string
}

// Table is THE version table: it builds the ApiVersions answer and gates
// every incoming request, so an advertised version is a handled version.
type Table struct {
	rows       []Row
	index      map[int16]Row
	advertised []kmsg.ApiVersionsResponseApiKey
	features   []Feature
}

// Feature is one feature flag ApiVersions v3+ advertises (KIP-584): the
// levels the node supports, and the level finalized for the cluster (0
// is not finalized, and not listed as finalized, as in Kafka).
type Feature struct {
	Name      string
	Min, Max  int16
	Finalized int16
}

// NewTable indexes rows, in the order ApiVersions lists them, with the
// features ApiVersions advertises.
func NewTable(rows []Row, features ...Feature) *Table {
	t := &Table{rows: rows, index: make(map[int16]Row, len(rows)), features: features}
	for _, r := range rows {
		t.index[r.Key] = r
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = r.Key, r.Min, r.Max
		t.advertised = append(t.advertised, k)
	}
	return t
}

// Features is the features ApiVersions advertises.
func (t *Table) Features() []Feature { return t.features }

// Rows is the table's rows, in order.
func (t *Table) Rows() []Row { return t.rows }

// Row returns the row of key.
func (t *Table) Row(key int16) (Row, bool) {
	r, ok := t.index[key]
	return r, ok
}

// Advertised is a copy of the table's ApiVersions answer, so that a
// response being encoded never aliases another's.
func (t *Table) Advertised() []kmsg.ApiVersionsResponseApiKey {
	return append([]kmsg.ApiVersionsResponseApiKey(nil), t.advertised...)
}
