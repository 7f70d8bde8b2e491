package node

import (
	"strings"

	"github.com/queen-mq/queen-kafka/catalogue"
	"github.com/queen-mq/queen-kafka/transport"
)

// callerOf is the connection as the catalogue knows a caller: the identity
// its topic list is filed under and the Queen client that reads it. A nil
// connection is the node itself.
func callerOf(c *transport.Conn) catalogue.Caller {
	if c == nil {
		return catalogue.Caller{}
	}
	return catalogue.Caller{Identity: c.Identity(), Queen: c.Queen()}
}

// transientIdentity reports whether an identity is a credential standing
// for itself, which comes and goes with its token: only its catalogue is
// dropped when idle (catalogue.Deps.Transient).
func transientIdentity(id string) bool { return strings.HasPrefix(id, transport.CredentialIdentity) }
