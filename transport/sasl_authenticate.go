package transport

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen"
)

// SASLAuthenticate is the handler of SaslAuthenticate's row.
var SASLAuthenticate = Handle(saslAuthenticate)

// saslAuthenticate verifies a PLAIN credential. The password is the
// Queen bearer token and the username a label (logged, checked against
// nothing). The token is verified by one call to list the queues as that
// token: 401/403 is SASL_AUTHENTICATION_FAILED and the connection closes
// after the answer; any other failure (unreachable, 429, 5xx) closes the
// connection with no answer at all, which every client retries, so that a
// Queen restart never makes a fleet give up on a right password. On success
// the connection's Queen calls carry the token, filed under the tenant
// GET /auth/me names (identities); a failure to ask that (transport, 429,
// 5xx) closes the connection the same way, since it is no answer. session_lifetime_ms stays 0: this facade
// runs no re-authentication timer, and 0 stops clients from running one.
func saslAuthenticate(ctx context.Context, c *Conn, req *kmsg.SASLAuthenticateRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	refuse := func(code int16, msg string) (kmsg.Response, error) {
		resp.ErrorCode, resp.ErrorMessage = code, &msg
		c.closeAfterAnswer.Store(true)
		return resp, nil
	}
	if !c.mustAuthenticate() {
		// Kafka answers this outside its authenticator and keeps the
		// connection: nothing about it is unauthenticated.
		msg := "SaslAuthenticate outside SASL authentication: this listener has no SASL, or the connection already authenticated"
		resp.ErrorCode, resp.ErrorMessage = kerr.IllegalSaslState.Code, &msg
		return resp, nil
	}
	if c.sasl.Load() == saslStart {
		c.log.Info("SaslAuthenticate before SaslHandshake, closing connection")
		return refuse(kerr.IllegalSaslState.Code, "SaslAuthenticate before SaslHandshake: send SaslHandshake with mechanism PLAIN first")
	}
	user, token, ok := parsePlain(req.SASLAuthBytes)
	if !ok {
		c.log.Info("malformed SASL PLAIN token, closing connection")
		return refuse(kerr.SaslAuthenticationFailed.Code, "malformed SASL PLAIN token: want [authzid] NUL username NUL password, username and password not empty")
	}
	host := ""
	if c.srv.cfg.ForwardSNIHost {
		host = c.ServerName()
	}
	q := c.srv.cfg.Queen.As(token, host)
	// The asks to Queen end with the authentication deadline: a slow Queen
	// must not let an unauthenticated connection hold its slot past it.
	ctx, cancel := context.WithDeadline(ctx, c.authBy)
	defer cancel()
	if _, err := q.Queues(ctx); err != nil {
		if code, msg, ok := c.srv.cfg.SASLFault(err); ok {
			c.log.Info("SASL authentication refused by Queen, closing connection", "user", user, "status", queen.KindOf(err).String())
			return refuse(code, msg)
		}
		return nil, fmt.Errorf("SASL PLAIN user %q: verifying the token with Queen (closing with no error code, which clients retry): %w", user, err)
	}
	identity, err := c.srv.ids.identity(ctx, q, credentialKey(host, token), c.log)
	if err != nil {
		return nil, fmt.Errorf("SASL PLAIN user %q: asking Queen which tenant the token acts for (closing with no error code, which clients retry; filed under its credential instead, its consumer groups would split from its tenant's): %w", user, err)
	}
	c.SetCredential(q, identity)
	c.sasl.Store(saslDone)
	c.markAuthenticated()
	c.log.Info("SASL authenticated", "user", user, "identity", identity)
	return resp, nil
}

// parsePlain splits a PLAIN message (RFC 4616): [authzid] NUL authcid NUL
// passwd. The authzid is ignored (the username is only a label); an empty
// username or password is malformed, as Kafka's PLAIN server holds it, and
// an empty password must never reach Queen.Client.As, which would keep
// the node's own QUEEN_TOKEN.
func parsePlain(msg []byte) (user, password string, ok bool) {
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 || len(parts[1]) == 0 || len(parts[2]) == 0 {
		return "", "", false
	}
	return queen.Sanitize(string(parts[1])), string(parts[2]), true
}

// rawTokenRequest is the frame after a v0 SaslHandshake: the bare PLAIN
// message, with no request header. It is handled as a SaslAuthenticate v0
// and answered as a bare frame (Conn.writeAnswer).
func (t *Table) rawTokenRequest(frame []byte) (queued, error) {
	row, ok := t.Row(kmsg.SASLAuthenticate.Int16())
	if !ok {
		return queued{}, refuse("SASL token frame, but SaslAuthenticate is not offered")
	}
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.SASLAuthBytes = frame
	return queued{hdr: requestHeader{key: row.Key}, row: row, req: req, raw: true}, nil
}

// appendRawToken frames a v0 flow's answer: the server's bare token (empty
// for PLAIN). A refusal has no bare form; Kafka closes the connection.
func appendRawToken(dst []byte, resp kmsg.Response) ([]byte, bool) {
	r, ok := resp.(*kmsg.SASLAuthenticateResponse)
	if !ok || r.ErrorCode != 0 {
		return dst, false
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(r.SASLAuthBytes)))
	return append(dst, r.SASLAuthBytes...), true
}
