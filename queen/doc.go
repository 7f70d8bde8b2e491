// Package queen is the facade's only door to a Queen broker: one method per
// route of the HTTP contract (queen-api.md), the wire types both the
// client and the development broker (package queen/dev) speak, the typed
// errors a caller maps to Kafka error codes, the qk: key layout of §10, and
// Health, the verdict on Queen a client's calls leave (for a node's /readyz).
// The record payload envelope of §11 is package envelope's, and the JSON
// string rules of every body are package internal/jsontext's.
//
// Keeping the contract in one package is deliberate: the facade will be
// pointed at a real Queen later, so the client and the dev broker must agree
// with the document rather than with each other.
//
// It does not own, and must not reach for: anything of Kafka (it imports no
// kmsg or kerr; which Kafka code a typed error answers is package faults',
// and for the group APIs coordinator's kvCode); what a qk: row holds beyond
// its key (each family's value is its owner's: coordinator, producer,
// registry, txn, catalogue's topic configs, sharepartition's share
// states); or queen-dev's storage (queen/dev
// imports this package, never the reverse).
package queen
