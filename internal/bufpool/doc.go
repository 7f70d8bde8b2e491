// Package bufpool keeps large byte buffers for reuse: the produce path's
// request frames, push bodies and push answers, each up to megabytes. Made
// fresh per request they cost the process a zeroing, page faults on memory
// the scavenger gave back, and a collection soon after; pooled, a buffer
// of the size one request needed is there for the next.
//
// Buffers come in size classes four to a power of two (64 KiB, 80, 96,
// 112, 128, 160, …), so that a buffer holds its request's bytes with at
// most a quarter to spare, and a class's buffers serve every request of
// that size. The pools are sync.Pools: what is not reused is collected.
//
// It owns the size classes and the pools, nothing else: it knows no
// request, frame or Queen body, and a caller that Puts a buffer must not
// touch it again. It imports the standard library only.
package bufpool
