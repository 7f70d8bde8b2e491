package node

import (
	"context"
	"testing"
	"time"
)

func TestOrderedBudget(t *testing.T) {
	ctx := context.Background()
	b := newOrderedBudget(100)
	if b.acquire(ctx, 150) != nil { // more than the whole budget, alone: admitted
		t.Fatal("a lone oversized acquisition must pass")
	}
	if b.tryAcquire(1) {
		t.Fatal("tried past the budget")
	}
	got := make(chan error, 1)
	go func() { got <- b.acquire(ctx, 10) }()
	select {
	case <-got:
		t.Fatal("acquired past the budget")
	case <-time.After(50 * time.Millisecond):
	}
	b.release(150)
	if err := <-got; err != nil {
		t.Fatal("not admitted after the release")
	}
	if !b.tryAcquire(90) { // 10 + 90 fits exactly
		t.Fatal("a fitting acquisition waited")
	}
	wctx, cancel := context.WithCancel(ctx)
	go func() { got <- b.acquire(wctx, 1) }()
	cancel()
	if err := <-got; err == nil {
		t.Fatal("an ended context must refuse the waiter")
	}
	b.release(100)
	if !b.tryAcquire(100) {
		t.Fatal("a refused waiter kept budget")
	}
}
