package node

import "sync"

// byteBudget is a counting semaphore over bytes. One acquisition may exceed
// what is free when nothing is held, so a single maximum-size frame always
// gets through.
type byteBudget struct {
	mu     sync.Mutex
	cond   *sync.Cond
	used   int64
	max    int64
	closed bool
}

func newByteBudget(max int64) *byteBudget {
	b := &byteBudget{max: max}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// acquire waits for n bytes; false once the budget is closed.
func (b *byteBudget) acquire(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for !b.closed && b.used > 0 && b.used+n > b.max {
		b.cond.Wait()
	}
	if b.closed {
		return false
	}
	b.used += n
	return true
}

func (b *byteBudget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
	b.cond.Broadcast()
}

// close wakes every waiter for good.
func (b *byteBudget) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.cond.Broadcast()
}
