package node

import "testing"

// Two credentials never share a catalogue.
func TestCataloguePerIdentity(t *testing.T) {
	n, _ := newTestNode(t, nil)
	a, b := testConn(t, n), testConn(t, n)
	b.SetCredential(n.Queen(), "tenant-b")
	if n.cats.For(callerOf(a)) == n.cats.For(callerOf(b)) {
		t.Fatal("two identities share one catalogue")
	}
	if n.cats.For(callerOf(a)) != n.cats.For(callerOf(testConn(t, n))) {
		t.Fatal("one identity got two catalogues")
	}
}
