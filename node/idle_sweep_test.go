package node

import (
	"context"
	"slices"
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
	cs := newCatalogs(catalogDeps{now: clk.Now})
	conn := func(id string) *Conn {
		c := &Conn{}
		c.identity.Store(&id)
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

// TestIdleIdentitiesAreForgotten: a credential's answer unused for
// idleIdentity is forgotten when another credential is asked about, and
// asked again if it comes back; one being asked is never dropped.
func TestIdleIdentitiesAreForgotten(t *testing.T) {
	dq, _ := newDevQueen(t)
	clk := testsupport.NewFakeClock(time.Unix(1_800_000_000, 0))
	ids := newIdentities()
	ids.now = clk.Now
	asking := &identityAsk{done: make(chan struct{})}
	ids.m[credentialKey("", "asking")] = asking
	_, err := ids.identity(context.Background(), dq.q, credentialKey("", "old"), testLogger())
	require.NoError(t, err)

	clk.Advance(idleIdentity + idleSweepEvery)
	_, err = ids.identity(context.Background(), dq.q, credentialKey("", "new"), testLogger())
	require.NoError(t, err)
	ids.mu.Lock()
	defer ids.mu.Unlock()
	require.NotContains(t, ids.m, credentialKey("", "old"), "idle: forgotten")
	require.Contains(t, ids.m, credentialKey("", "new"))
	require.Same(t, asking, ids.m[credentialKey("", "asking")], "an ask under way stays")
}
