package consumergroup

import (
	"context"
	"sync"
)

// fakeTopics is a catalogue the test edits.
type fakeTopics struct {
	mu     sync.Mutex
	topics []Topic
	err    error
	gate   chan struct{} // when set, All waits for it (a slow catalogue)
	inAll  chan struct{} // when set, All signals it before waiting on gate
}

func (f *fakeTopics) All(context.Context) ([]Topic, error) {
	f.mu.Lock()
	gate, inAll := f.gate, f.inAll
	f.mu.Unlock()
	if gate != nil {
		if inAll != nil {
			inAll <- struct{}{}
		}
		<-gate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	return append([]Topic(nil), f.topics...), nil
}

func (f *fakeTopics) add(name string, parts int32) topicID {
	f.mu.Lock()
	defer f.mu.Unlock()
	var id topicID
	copy(id[:], name)
	id[15] = byte(len(f.topics) + 1)
	f.topics = append(f.topics, Topic{Name: name, ID: id, Partitions: parts})
	return id
}
