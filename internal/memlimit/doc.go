// Package memlimit decides the facade's Go memory limit at boot
// (debug.SetMemoryLimit): an explicit GOMEMLIMIT wins, as Go users expect;
// otherwise QUEEN_KAFKA_MEMORY_LIMIT's size; otherwise, its default, a
// fraction of the memory limit of the container the process runs in, read
// from its cgroup (v2 memory.max, v1 memory.limit_in_bytes), so that the
// garbage collector works harder as the heap nears the pod's limit instead
// of the kernel killing the process at it; without any, no limit.
//
// It owns: reading the cgroup files (under a root that tests point at fake
// files), the size syntax of QUEEN_KAFKA_MEMORY_LIMIT (ParseSize, which
// package config asks for), the fraction, and the decision with where it
// came from. It must not reach for the configuration (package config
// parses the variables and passes their values in) or for anything else
// of the facade: it imports the standard library only.
package memlimit
