// Package hashring answers, from nothing but the live node ids, who owns a
// consumer group, which node a partition's leader is advertised as, the
// replica list Metadata carries and which node is the controller.
//
// Every answer is a pure function of (live set, key): the set is sorted and
// de-duplicated before use, so two facades that read the same registry rows
// in any order give the same answer, and no state survives between calls
// that could make two nodes disagree. Ownership is rendezvous (highest random
// weight) hashing, github.com/dgryski/go-rendezvous, so a membership change
// moves only the keys of the node that came or went.
//
// The hash function is part of the cluster's wire contract: every facade of a
// cluster must compute it identically, or two of them name different owners
// and a group forms twice. Changing Hash is therefore a breaking change for
// a rolling deploy, not a refactor.
//
// It does not own, and must not reach for: who is live (package registry
// reads the qk:node: rows and hands the set in), Queen or any I/O, and the
// Kafka wire (node lays the answers out); it imports no package of this
// module.
package hashring
