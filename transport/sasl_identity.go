package transport

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/queen-mq/queen-kafka/internal/idlesweep"
	"github.com/queen-mq/queen-kafka/queen"
)

// identities remembers which tenant each SASL credential acts for (§9),
// asked once per credential. The tenant is what a connection's consumer
// groups and topic list are filed under, so two keys of one tenant share
// one coordinator. It holds only credentials Queen has just verified, keyed
// by their hash: never the token itself.
//
// Only a definite answer is kept: a tenant, or a refusal to name one (the
// credential then stands for itself). A failure to ask (transport, 429,
// 5xx) is no answer: the connection asking is closed, and the next one
// asks again. Filing it under its credential instead would, for the life
// of the connection, make its consumer group a second group beside the
// tenant's, both assigned every partition.
type identities struct {
	mu    sync.Mutex
	m     map[[sha256.Size]byte]*identityAsk
	sweep idlesweep.Sweep
	now   func() time.Time
}

// idleIdentity is how long a credential's answer is kept unused: tokens
// come and go (a JWT broker rotates them), and a credential back after
// that is asked again, once.
const idleIdentity = 30 * time.Minute

// identityAsk is one question to GET /auth/me, shared by every connection
// of the credential that arrives while it is asked; done is closed with
// the outcome.
type identityAsk struct {
	done   chan struct{}
	tenant string    // "" when no tenant was named
	err    error     // a failure to ask: no answer
	used   time.Time // its last use (identities.mu)
}

func newIdentities() *identities {
	return &identities{m: make(map[[sha256.Size]byte]*identityAsk), now: time.Now}
}

// credentialKey hashes a credential with the Host its calls carry: behind
// a proxy routing on Host one token may act for two tenants.
func credentialKey(host, token string) [sha256.Size]byte {
	return sha256.Sum256([]byte(host + "\x00" + token))
}

// identity is "tenant:<id>" when GET /auth/me names the tenant q acts for,
// and the credential standing for itself, as its hash, when Queen answers
// definitely that it names none. Callers of one credential arriving while
// it is being asked (a fleet reconnecting) wait for that one answer. A
// failure to ask is returned, to every caller that waited on it, and
// forgotten.
func (ids *identities) identity(ctx context.Context, q *queen.Client, key [sha256.Size]byte, log *slog.Logger) (string, error) {
	now := ids.now()
	ids.mu.Lock()
	a, known := ids.m[key]
	if !known {
		idlesweep.Run(&ids.sweep, now, ids.m, func(_ [sha256.Size]byte, a *identityAsk) bool {
			return now.Sub(a.used) > idleIdentity && idlesweep.IsDone(a.done)
		})
		a = &identityAsk{done: make(chan struct{})}
		ids.m[key] = a
	}
	a.used = now
	ids.mu.Unlock()
	if known {
		select {
		case <-a.done:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		return a.name(key), a.err
	}

	tenant, err := q.AuthMe(ctx)
	switch {
	case err == nil:
		a.tenant = tenant
	case transientIdentityFailure(err):
		a.err = err
		ids.mu.Lock()
		delete(ids.m, key)
		ids.mu.Unlock()
	default:
		log.Debug("GET /auth/me names no tenant for this credential; it stands for itself", "err", err)
	}
	close(a.done)
	return a.name(key), a.err
}

// names is the identity each remembered credential is filed under ("" for
// one still being asked).
func (ids *identities) names() []string {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	var out []string
	for key, a := range ids.m {
		if !idlesweep.IsDone(a.done) {
			out = append(out, "")
			continue
		}
		out = append(out, a.name(key))
	}
	return out
}

// CredentialIdentity prefixes the identity of a credential that stands for
// itself (Queen names no tenant for it).
const CredentialIdentity = "cred:"

// name is the identity an answer files the credential under.
func (a *identityAsk) name(key [sha256.Size]byte) string {
	if a.err != nil {
		return ""
	}
	if a.tenant != "" {
		return "tenant:" + a.tenant
	}
	return CredentialIdentity + hex.EncodeToString(key[:16])
}

// transientIdentityFailure is a failure to ask that asking again may not
// repeat: Queen unreachable or too slow, throttling, or a 5xx. Anything
// else (401/403 from a broker that does not answer bearers there, a 4xx,
// a 404 from a gateway without the route) is a definite answer naming no
// tenant.
func transientIdentityFailure(err error) bool {
	switch queen.KindOf(err) {
	case queen.KindThrottled, queen.KindTransient, queen.KindTransport, queen.KindTimeout, queen.KindCanceled:
		return true
	case queen.KindServer:
		var qe *queen.Error
		return errors.As(err, &qe) && qe.Status >= 500
	}
	return false
}
