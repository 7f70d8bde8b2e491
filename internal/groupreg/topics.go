package groupreg

import "context"

// Topic is a topic a group member may subscribe to.
type Topic struct {
	Name       string
	ID         [16]byte
	Partitions int32
}

// Topics is the caller's catalogue as a group sees it (package catalogue's
// ServedTopics satisfies it).
type Topics interface {
	// All is every topic a client may name, with its id and width.
	All(ctx context.Context) ([]Topic, error)
}
