package dev

import "encoding/json"

// scanTxnBody is the transaction route's fast decoder, the push scanner's
// counterpart: one validating pass over
// {"operations":[{"type":"push","items":[{…},…]},…],"kv":[…]} that slices
// payloads and KV ops out of body. encoding/json took the body apart four
// times over (the envelope, operations, each operation, its items), each
// pass validating again, and copied every payload: 61% of a 4,000-record
// commit's time. ok false means "not the plain shape" (escaped or
// case-folded keys, a value of an unexpected type, a non-object operation
// or item): the caller then uses encoding/json, which stays the authority
// for every error message. ok true promises that every decode step of
// decodeTxnJSON would succeed and yield what t holds.
func scanTxnBody(body []byte) (t *txnBody, ok bool) {
	s := &scanner{b: body}
	s.ws()
	if !s.eat('{') {
		return nil, false
	}
	t = &txnBody{}
	fields := s.list('}', func() bool {
		key, ok := s.key()
		if !ok || foldsToAny(key, "operations", "kv", "timers", "requiredLeases") {
			return false
		}
		switch string(key) {
		case "operations":
			t.ops, t.hasOps, ok = s.txnOps()
			return ok
		case "kv":
			t.kv, t.hasKV, ok = s.rawList()
			return ok
		case "timers":
			var l []json.RawMessage
			l, _, ok = s.rawList()
			t.timers = len(l)
			return ok
		case "requiredLeases":
			var l []json.RawMessage
			l, _, ok = s.rawList()
			t.leases = len(l)
			return ok
		}
		return s.skip(0)
	})
	if !fields {
		return nil, false
	}
	s.ws()
	if s.i != len(s.b) {
		return nil, false
	}
	return t, true
}

// rawList reads null (present false) or an array, whose elements it
// slices out of the body as encoding/json's []json.RawMessage holds them.
func (s *scanner) rawList() (list []json.RawMessage, present, ok bool) {
	if s.lit("null") {
		return nil, false, true
	}
	if !s.eat('[') {
		return nil, false, false
	}
	list = []json.RawMessage{}
	ok = s.list(']', func() bool {
		start := s.i
		if !s.skip(1) {
			return false
		}
		list = append(list, s.b[start:s.i:s.i])
		return true
	})
	return list, ok, ok
}

// txnOps reads null (present false) or the array of operations.
func (s *scanner) txnOps() (ops []txnOp, present, ok bool) {
	if s.lit("null") {
		return nil, false, true
	}
	if !s.eat('[') {
		return nil, false, false
	}
	ok = s.list(']', func() bool {
		op, ok := s.txnOp()
		ops = append(ops, op)
		return ok
	})
	return ops, ok, ok
}

// txnOp reads one operation object: its type, and its items or, without
// an items list (absent or null), the operation itself as the one item.
func (s *scanner) txnOp() (op txnOp, ok bool) {
	if !s.eat('{') {
		return op, false
	}
	var one rawItem
	hasItems := false
	ok = s.list('}', func() bool {
		key, ok := s.key()
		if !ok || foldsToAny(key, "type", "items") {
			return false
		}
		switch string(key) {
		case "type":
			start := s.i
			if !s.skip(0) {
				return false
			}
			op.typ, ok = stringOrNull(s.b[start:s.i])
			return ok
		case "items":
			if s.lit("null") {
				op.items, hasItems = nil, false
				return true
			}
			op.items, hasItems = s.items()
			return hasItems
		}
		// encoding/json would decode the operation as an item only
		// without an items list; taking only well-typed fields either way
		// leaves an odd one to it.
		return s.value(key, &one)
	})
	if ok && !hasItems {
		op.items = []rawItem{one}
	}
	return op, ok
}
