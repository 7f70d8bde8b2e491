// Package bufpool keeps large byte buffers for reuse: the produce path's
// request frames, envelope arrays, push bodies and push answers, each up to
// megabytes. Made fresh per request they cost the process a zeroing, page
// faults on memory the scavenger gave back, and a collection soon after;
// pooled, a buffer of the size one request needed is there for the next.
//
// Buffers come in size classes four to a power of two (64 KiB, 80, 96,
// 112, 128, 160, …), so that a buffer holds its request's bytes with at
// most a quarter to spare; a class's free buffers serve every request of
// that class or of the class below (requests of one size straddle two).
// The free buffers are lists under one lock, found from any processor, not
// sync.Pools, which keep one per processor for that processor alone (one
// producer's frames, read on one processor and given back on another,
// took two or three buffers of each class). Those kept are at most MaxFree
// bytes, all classes together, and each collection of the Go runtime
// drops those nobody took since the one before: what is not reused goes
// back to the collector, and an idle process (collected every two minutes
// at least) keeps none.
//
// It owns the size classes and the pools, nothing else: it knows no
// request, frame or Queen body, and a caller that Puts a buffer must not
// touch it again. It imports the standard library only.
package bufpool
