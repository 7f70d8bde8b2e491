// Command shareworker is one KIP-932 share consumer (franz-go's kgo share
// consumer) as its own process, so that a test can SIGKILL it mid-run
// (e2e/share_kill_test.go). It reads a topic in a share group, holds each
// batch for -hold (its work), acknowledges every record by a rule of its
// key (REJECT 1 in 100 and RELEASE 1 in 10 on their first delivery,
// ACCEPT everything else), and prints on stdout what it was delivered and
// which acknowledgements the broker confirmed, one line each, for the test
// to check:
//
//	D <partition> <offset> <key> <delivery count>   a delivery, before any ack
//	C <partition> <offset> <A|L|J>                  an ack answered success
//	F <partition> <offset> <A|L|J>                  an ack answered an error
//
// (A accept, L release, J reject). A line is written whole (one write), so
// a SIGKILL cuts at most the last one. It runs until SIGTERM, then closes
// its client (leaving the group) and exits 0.
//
// For the e2e suite only; it imports no package of the product module.
package main
