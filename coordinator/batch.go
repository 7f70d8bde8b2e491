package coordinator

import "github.com/queen-mq/queen-kafka/queen"

// batch is one request's KV writes, one per key, each with the request
// positions (topic i, partition j) its outcome answers. A key named twice
// is written once, with the later op, and that write answers both.
type batch struct {
	ops  []queen.KVOp
	at   map[string]int // key → index in ops
	refs map[string][]position
}

type position struct{ i, j int }

func (b *batch) add(op queen.KVOp, i, j int) {
	if b.at == nil {
		b.at, b.refs = map[string]int{}, map[string][]position{}
	}
	if k, ok := b.at[op.Key]; ok {
		b.ops[k] = op
	} else {
		b.at[op.Key] = len(b.ops)
		b.ops = append(b.ops, op)
	}
	b.refs[op.Key] = append(b.refs[op.Key], position{i, j})
}

// fail answers code at every position of ops[from:]: writeOps applies a
// prefix, so those are exactly the writes that did not happen.
func (b *batch) fail(codes [][]int16, from int, code int16) {
	for _, op := range b.ops[from:] {
		for _, p := range b.refs[op.Key] {
			codes[p.i][p.j] = code
		}
	}
}
