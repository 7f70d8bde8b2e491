package recordbatch_test

import (
	"context"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/recordbatch"
)

func TestOrderedBudget(t *testing.T) {
	ctx := context.Background()
	b := recordbatch.NewBudget(100)
	if b.Acquire(ctx, 150) != nil { // more than the whole budget, alone: admitted
		t.Fatal("a lone oversized acquisition must pass")
	}
	if b.TryAcquire(1) {
		t.Fatal("tried past the budget")
	}
	got := make(chan error, 1)
	go func() { got <- b.Acquire(ctx, 10) }()
	select {
	case <-got:
		t.Fatal("acquired past the budget")
	case <-time.After(50 * time.Millisecond):
	}
	b.Release(150)
	if err := <-got; err != nil {
		t.Fatal("not admitted after the release")
	}
	if !b.TryAcquire(90) { // 10 + 90 fits exactly
		t.Fatal("a fitting acquisition waited")
	}
	wctx, cancel := context.WithCancel(ctx)
	go func() { got <- b.Acquire(wctx, 1) }()
	cancel()
	if err := <-got; err == nil {
		t.Fatal("an ended context must refuse the waiter")
	}
	b.Release(100)
	if !b.TryAcquire(100) {
		t.Fatal("a refused waiter kept budget")
	}
}
