// Package idlesweep drops the idle entries of a map filed by identity or
// credential (the catalogues, the SASL identity answers), at most once per
// Every. It owns the sweep's pacing only; what counts as idle is the
// caller's, and the map and its lock stay the caller's too. It imports the
// standard library only.
package idlesweep
