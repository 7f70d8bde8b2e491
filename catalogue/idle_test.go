package catalogue

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
)

// TestIdleCredentialCatalogsAreDropped: the topic list of a credential
// standing for itself is dropped once unused for idleCredentialCatalog
// (tokens rotate; each kept a whole list for the process's life), when a
// new list is filed; a tenant's is kept, and so is a credential's in use.
func TestIdleCredentialCatalogsAreDropped(t *testing.T) {
	clk := testsupport.NewFakeClock(time.Unix(1_800_000_000, 0))
	cs := New(Deps{Now: clk.Now, Transient: func(id string) bool { return strings.HasPrefix(id, "cred:") }})
	conn := func(id string) Caller { return Caller{Identity: id} }
	filed := cs.Filed
	tenant := cs.For(conn("tenant:a"))
	cs.For(conn("cred:rotated"))
	cs.For(conn("cred:busy"))
	for range 4 {
		clk.Advance(idleCredentialCatalog / 3)
		cs.For(conn("cred:busy"))
	}
	cs.For(conn("cred:new"))
	require.Equal(t, []string{"cred:busy", "cred:new", "tenant:a"}, filed())
	require.Same(t, tenant, cs.For(conn("tenant:a")), "a tenant's list is kept however quiet")
}
