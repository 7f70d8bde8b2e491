package budget_test

import (
	"context"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/budget"
)

func TestOrderedBudget(t *testing.T) {
	ctx := context.Background()
	b := budget.New(100)
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

// TestBudgetTurnsAcrossOwners (issue 11, item 12): one owner queueing many
// claims (a tenant flooding produce) does not starve another owner's claim
// queued after them: waiters are served one per owner in turn, each
// owner's in arrival order.
func TestBudgetTurnsAcrossOwners(t *testing.T) {
	ctx := context.Background()
	b := budget.New(10)
	if err := b.Acquire(ctx, 10); err != nil {
		t.Fatal(err)
	}
	granted := make(chan string, 16)
	queue := func(owner, name string) {
		before := b.Waiting()
		go func() {
			if err := b.AcquireAs(ctx, owner, 10); err != nil {
				t.Error(err)
				return
			}
			granted <- name
		}()
		for b.Waiting() == before { // queued, in this order
			time.Sleep(time.Millisecond)
		}
	}
	for i := range 5 {
		queue("tenant:flood", "flood-"+string(rune('0'+i)))
	}
	queue("tenant:quiet", "quiet")
	var order []string
	for range 6 {
		b.Release(10) // each grant holds the whole budget until released
		order = append(order, <-granted)
	}
	want := []string{"flood-0", "quiet", "flood-1", "flood-2", "flood-3", "flood-4"}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("grant order %v, want %v: the quiet owner waits its turn, not the flood's", order, want)
		}
	}
	b.Release(10)
	if b.Free() != 10 || b.Waiting() != 0 {
		t.Fatalf("free %d waiting %d after every grant was released", b.Free(), b.Waiting())
	}
}

// TestBudgetOwnerGivesUp: a waiter whose context ends leaves its owner's
// turn without disturbing the others'.
func TestBudgetOwnerGivesUp(t *testing.T) {
	b := budget.New(10)
	if err := b.Acquire(context.Background(), 10); err != nil {
		t.Fatal(err)
	}
	gone, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() { gaveUp <- b.AcquireAs(gone, "a", 10) }()
	for b.Waiting() == 0 {
		time.Sleep(time.Millisecond)
	}
	got := make(chan error, 1)
	go func() { got <- b.AcquireAs(context.Background(), "b", 10) }()
	for b.Waiting() < 2 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-gaveUp; err != context.Canceled {
		t.Fatalf("gave up with %v", err)
	}
	b.Release(10)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if b.Waiting() != 0 || b.Free() != 0 {
		t.Fatalf("waiting %d free %d", b.Waiting(), b.Free())
	}
}
