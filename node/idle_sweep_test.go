package node

import (
	"net"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
	"github.com/queen-mq/queen-kafka/transport"
)

// TestIdleCredentialCatalogsAreDropped: the topic list of a credential
// standing for itself is dropped once unused for idleCredentialCatalog
// (tokens rotate; each kept a whole list for the process's life), when a
// new list is filed; a tenant's is kept, and so is a credential's in use.
func TestIdleCredentialCatalogsAreDropped(t *testing.T) {
	clk := testsupport.NewFakeClock(time.Unix(1_800_000_000, 0))
	cs := newCatalogs(catalogDeps{now: clk.Now})
	srv := transport.NewServer(transport.Config{})
	conn := func(id string) *transport.Conn {
		a, b := net.Pipe()
		t.Cleanup(func() { a.Close(); b.Close() })
		c := srv.NewConn(a)
		c.SetCredential(nil, id)
		return c
	}
	filed := func() []string {
		cs.mu.Lock()
		defer cs.mu.Unlock()
		var ids []string
		for id := range cs.m {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		return ids
	}
	tenant := cs.forConn(conn("tenant:a"))
	cs.forConn(conn("cred:rotated"))
	cs.forConn(conn("cred:busy"))
	for range 4 {
		clk.Advance(idleCredentialCatalog / 3)
		cs.forConn(conn("cred:busy"))
	}
	cs.forConn(conn("cred:new"))
	require.Equal(t, []string{"cred:busy", "cred:new", "tenant:a"}, filed())
	require.Same(t, tenant, cs.forConn(conn("tenant:a")), "a tenant's list is kept however quiet")
}
