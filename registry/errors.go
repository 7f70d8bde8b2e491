package registry

import (
	"errors"
	"fmt"
	"time"
)

// ErrUnavailable is wrapped by every Err that means "the registry cannot be
// trusted right now": the last heartbeat failed or is too old. Group RPCs
// answer COORDINATOR_NOT_AVAILABLE, which every client retries.
var ErrUnavailable = errors.New("registry unavailable")

// ErrClosed is Err after Close.
var ErrClosed = errors.New("registry session closed")

// ConflictError is a boot that found another live process holding its node
// id: the row's version moved while it was being watched. It carries the
// observation so the operator reads the cause, not a guess.
type ConflictError struct {
	Key          string
	NodeID       int32
	FirstVersion int64         // version first seen
	LastVersion  int64         // version it moved to
	Watched      time.Duration // how long the row was watched before it moved
	Holder       Node          // the row's value at the last observation
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("registry: node id %d is held by another live facade: row %s moved from version %d to %d within %v "+
		"(holder incarnation %q advertising %s, since %s, version %q); give every facade its own QUEEN_KAFKA_NODE_ID",
		e.NodeID, e.Key, e.FirstVersion, e.LastVersion, e.Watched.Round(time.Millisecond),
		e.Holder.Incarnation, e.Holder.Addr(), time.UnixMilli(e.Holder.Since).UTC().Format(time.RFC3339Nano), e.Holder.Version)
}

// LostError is a held id taken by another process: a heartbeat found the
// row rewritten by another incarnation. It is terminal for the session.
type LostError struct {
	Key         string
	NodeID      int32
	HeldVersion int64 // the version this process held
	Version     int64 // the version found
	Holder      Node  // the row's value as found
}

func (e *LostError) Error() string {
	return fmt.Sprintf("registry: node id %d lost: row %s is version %d (this process held %d), written by incarnation %q advertising %s; "+
		"another facade runs with this node id", e.NodeID, e.Key, e.Version, e.HeldVersion, e.Holder.Incarnation, e.Holder.Addr())
}
