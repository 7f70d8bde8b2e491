// Package queen is the facade's only door to a Queen broker: one method per
// route of the HTTP contract (../shared/queen-api.md), the wire types both the
// client and the development broker (package queen/dev) speak, the typed
// errors a caller maps to Kafka error codes, the record payload envelope of
// §11 and the qk: key layout of §10.
//
// Keeping the contract in one package is deliberate: the facade will be
// pointed at a real Queen later, so the client and the dev broker must agree
// with the document rather than with each other.
package queen
