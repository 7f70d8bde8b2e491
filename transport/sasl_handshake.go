package transport

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen"
)

// Where a connection stands in SASL authentication (Conn.sasl). The
// handshake's version picks the flow: after v1 the token arrives inside a
// SaslAuthenticate request, after v0 as the bare bytes of the next frame,
// which the reader must therefore know to read without a request header.
const (
	saslStart    int32 = iota // no handshake yet
	saslFramed                // v1 handshake done: a SaslAuthenticate request follows
	saslRawToken              // v0 handshake done: the next frame is the bare token
	saslDone                  // authenticated
)

// saslPlain is the one mechanism: its password is a Queen bearer token.
// Matched exactly, as Kafka's broker matches mechanism names.
const saslPlain = "PLAIN"

// SASLHandshake is the handler of SaslHandshake's row.
var SASLHandshake = Handle(saslHandshake)

// saslHandshake picks the mechanism and the flow (v0 raw token, v1
// SaslAuthenticate). A mechanism other than PLAIN is answered
// UNSUPPORTED_SASL_MECHANISM with the list and the connection closes, as
// Kafka's authenticator does. Outside authentication (no SASL on this
// listener, or already authenticated) the answer is ILLEGAL_SASL_STATE.
func saslHandshake(_ context.Context, c *Conn, req *kmsg.SASLHandshakeRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	if !c.mustAuthenticate() {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp, nil
	}
	resp.SupportedMechanisms = []string{saslPlain}
	if c.sasl.Load() != saslStart {
		c.log.Info("second SASL handshake, closing connection")
		resp.ErrorCode = kerr.IllegalSaslState.Code
		c.closeAfterAnswer.Store(true)
		return resp, nil
	}
	if req.Mechanism != saslPlain {
		c.log.Info("SASL mechanism not offered, closing connection", "mechanism", queen.Sanitize(req.Mechanism))
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		c.closeAfterAnswer.Store(true)
		return resp, nil
	}
	if req.Version == 0 {
		c.sasl.Store(saslRawToken)
	} else {
		c.sasl.Store(saslFramed)
	}
	return resp, nil
}
