package node

import (
	"testing"
	"time"
)

func TestByteBudget(t *testing.T) {
	b := newByteBudget(100)
	if !b.acquire(150) { // more than the whole budget, alone: admitted
		t.Fatal("a lone oversized acquisition must pass")
	}
	got := make(chan bool, 1)
	go func() { got <- b.acquire(10) }()
	select {
	case <-got:
		t.Fatal("acquired past the budget")
	case <-time.After(50 * time.Millisecond):
	}
	b.release(150)
	if ok := <-got; !ok {
		t.Fatal("not admitted after the release")
	}
	if !b.acquire(90) { // 10 + 90 fits exactly
		t.Fatal("a fitting acquisition waited")
	}
	go func() { got <- b.acquire(1) }()
	b.close()
	if ok := <-got; ok {
		t.Fatal("close must refuse the waiter")
	}
}
