package groupreg

import (
	"context"
	"strings"
	"time"

	"github.com/queen-mq/queen-kafka/queen"
)

// Rows is a group owner's account of the rows it writes: the version of
// the meta row it last wrote or read (Ver; below 0 for a group made here,
// whose rows must still be absent), whether the meta row changed, and the
// member rows to put and to delete at the next write. The group's lock
// guards it.
type Rows struct {
	Ver       int64
	MetaDirty bool
	put, del  map[string]bool
}

// Put marks member id's row to be written (and no longer deleted).
func (r *Rows) Put(id string) {
	if r.put == nil {
		r.put = map[string]bool{}
	}
	r.put[id] = true
	delete(r.del, id)
}

// Delete marks member id's row to be deleted (and no longer written).
func (r *Rows) Delete(id string) {
	if r.del == nil {
		r.del = map[string]bool{}
	}
	r.del[id] = true
	delete(r.put, id)
}

// Forget leaves member id's row as it is: a member made and taken back
// before any write.
func (r *Rows) Forget(id string) {
	delete(r.put, id)
	delete(r.del, id)
}

// Pending reports whether anything is to be written.
func (r *Rows) Pending() bool { return r.MetaDirty || len(r.put) > 0 || len(r.del) > 0 }

// Ops is the member rows' operations: a put of row(id) at key(id) for each
// member marked that row still has (ok false: the member is gone), a
// delete for each marked gone.
func (r *Rows) Ops(key func(id string) string, row func(id string) (v any, ok bool)) []queen.KVOp {
	var ops []queen.KVOp
	for id := range r.put {
		if v, ok := row(id); ok {
			ops = append(ops, Put(key(id), v))
		}
	}
	for id := range r.del {
		ops = append(ops, queen.KVOp{Op: queen.OpDelete, NS: queen.Namespace, Key: key(id)})
	}
	return ops
}

// Written clears what a successful write wrote.
func (r *Rows) Written() {
	clear(r.put)
	clear(r.del)
	r.MetaDirty = false
}

// Owner is this node as the writer of the groups it coordinates. Fenced
// (cluster mode): a group's first write here and a takeover move
// qk:fence:<group>, in the coordinator's format (NodeID, Incarnation), so
// that the previous owner's next write or offset commit fails.
type Owner struct {
	Fenced      bool
	NodeID      int32
	Incarnation string
}

// Write is Write for a group whose account is rows: meta is the put of
// its meta row, gen its epoch (the fence's generation), takeover set for
// the first write after a load.
func (o Owner) Write(ctx context.Context, kv queen.KVCaller, group string, meta queen.KVOp, rows *Rows, takeover bool, gen int32, now time.Time, ops []queen.KVOp) error {
	var fence *queen.FenceValue
	if o.Fenced && (takeover || rows.Ver < 0) {
		fence = &queen.FenceValue{Node: o.NodeID, Incarnation: o.Incarnation, Generation: gen, TS: now.UnixMilli()}
	}
	return Write(ctx, kv, group, meta, &rows.Ver, fence, ops)
}

// Read is a group's rows under prefix: the meta row at metaKey (nil when
// the group has none) and its member rows (prefix "m:").
func Read(ctx context.Context, kv queen.KVCaller, prefix, metaKey string) (meta *queen.KVRow, members []queen.KVRow, err error) {
	rows, err := queen.ReadPrefix(ctx, kv, prefix, 1000, false)
	if err != nil {
		return nil, nil, err
	}
	for i, r := range rows {
		switch {
		case r.Key == metaKey:
			meta = &rows[i]
		case strings.HasPrefix(r.Key, prefix+"m:"):
			members = append(members, r)
		}
	}
	return meta, members, nil
}

// Delete deletes every row under prefix, the meta row at metaKey last, so
// that a delete cut short leaves a group that still loads (and can be
// deleted again).
func Delete(ctx context.Context, kv queen.KVCaller, prefix, metaKey string) error {
	rows, err := queen.ReadPrefix(ctx, kv, prefix, 1000, true)
	if err != nil {
		return err
	}
	var ops []queen.KVOp
	for _, r := range rows {
		if r.Key != metaKey {
			ops = append(ops, queen.KVOp{Op: queen.OpDelete, NS: queen.Namespace, Key: r.Key})
		}
	}
	ops = append(ops, queen.KVOp{Op: queen.OpDelete, NS: queen.Namespace, Key: metaKey})
	for len(ops) > 0 {
		n := min(len(ops), maxOpsPerCall)
		if _, err := kv.KV(ctx, ops[:n]); err != nil {
			return err
		}
		ops = ops[n:]
	}
	return nil
}
