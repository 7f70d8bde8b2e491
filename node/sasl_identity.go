package node

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"sync"
	"time"

	"github.com/queen-mq/queen-kafka/queen"
)

// identityRetry is how long a failure to ask GET /auth/me (transport, 429,
// 5xx) stands before the credential is asked again; a definite answer,
// naming a tenant or not, is kept.
const identityRetry = 30 * time.Second

// identities remembers which tenant each SASL credential acts for (§9),
// asked once per credential. The tenant is what a connection's consumer
// groups and topic list are filed under, so two keys of one tenant share
// one coordinator. It holds only credentials Queen has just verified, keyed
// by their hash: never the token itself.
type identities struct {
	n  *Node
	mu sync.Mutex
	m  map[[sha256.Size]byte]identityAnswer
}

type identityAnswer struct {
	tenant  string        // "" when no tenant was named
	retryAt time.Time     // zero: a definite answer
	asking  chan struct{} // non-nil while being asked; closed with the answer
}

func newIdentities(n *Node) *identities {
	return &identities{n: n, m: make(map[[sha256.Size]byte]identityAnswer)}
}

// credentialKey hashes a credential with the Host its calls carry: behind
// a proxy routing on Host one token may act for two tenants.
func credentialKey(host, token string) [sha256.Size]byte {
	return sha256.Sum256([]byte(host + "\x00" + token))
}

// identity is "tenant:<id>" when GET /auth/me names the tenant q acts for,
// and otherwise the credential standing for itself, as its hash. Callers
// of one credential arriving while it is being asked (a fleet reconnecting)
// wait for that one answer. A failure to ask never fails an authentication.
func (ids *identities) identity(ctx context.Context, q *queen.Client, key [sha256.Size]byte, log *slog.Logger) string {
	for {
		now := ids.n.now()
		ids.mu.Lock()
		a, known := ids.m[key]
		switch {
		case known && a.asking != nil:
			ids.mu.Unlock()
			select {
			case <-a.asking:
				continue
			case <-ctx.Done():
				return a.name(key)
			}
		case known && (a.retryAt.IsZero() || now.Before(a.retryAt)):
			ids.mu.Unlock()
			return a.name(key)
		}
		asking := make(chan struct{})
		ids.m[key] = identityAnswer{asking: asking}
		ids.mu.Unlock()

		a = identityAnswer{}
		tenant, err := q.AuthMe(ctx)
		switch {
		case err == nil:
			a.tenant = tenant
		case definiteIdentityFailure(err):
			log.Debug("GET /auth/me names no tenant for this credential; it stands for itself", "err", err)
		default:
			a.retryAt = now.Add(identityRetry)
			log.Info("GET /auth/me failed; the credential stands for itself until asked again", "err", err, "retry_after", identityRetry)
		}
		ids.mu.Lock()
		ids.m[key] = a
		ids.mu.Unlock()
		close(asking)
		return a.name(key)
	}
}

// name is the identity an answer files the credential under.
func (a identityAnswer) name(key [sha256.Size]byte) string {
	if a.tenant != "" {
		return "tenant:" + a.tenant
	}
	return "cred:" + hex.EncodeToString(key[:16])
}

// definiteIdentityFailure is an answer that asking again will not change:
// Queen refusing the question (401/403: auth on, bearer not accepted there)
// or the request itself.
func definiteIdentityFailure(err error) bool {
	switch queen.KindOf(err) {
	case queen.KindUnauthorized, queen.KindForbidden, queen.KindBadRequest, queen.KindTooLarge:
		return true
	}
	return false
}
