package node

import (
	"sync/atomic"

	"github.com/queen-mq/queen-kafka/fetchwatch"
	"github.com/queen-mq/queen-kafka/transport"
)

// connState is what the handlers keep per connection: the value the wire
// makes for each (transport.Config.ConnValue) and closes with it.
type connState struct {
	// fetchWatch is the watch of this connection's wide sessionless
	// fetches (fetch_watched.go), closed with the connection.
	fetchWatch atomic.Pointer[fetchwatch.Watch]
}

// Close closes what the connection held.
func (s *connState) Close() {
	if w := s.fetchWatch.Swap(nil); w != nil {
		w.Close()
	}
}

// stateOf is c's handler state.
func stateOf(c *transport.Conn) *connState { return c.Value().(*connState) }

// keepFetchWatch makes w the connection's sessionless fetch watch, closing
// the one it replaces; a closed connection closes w at once.
func keepFetchWatch(c *transport.Conn, w *fetchwatch.Watch) {
	s := stateOf(c)
	if old := s.fetchWatch.Swap(w); old != nil {
		old.Close()
	}
	if c.Closed() {
		if w := s.fetchWatch.Swap(nil); w != nil {
			w.Close()
		}
	}
}
