// Package clock is the Now/After time seam shared by the packages that wait
// (registry's heartbeats and boot watch, supervisor's restart backoff, stop
// grace and log window, txn's timeout sweep), and its Now/AfterFunc form
// (Timers) for the group coordinators: production passes Wall, tests a fake
// they advance (testsupport.FakeClock, testsupport.TimerClock), so no test
// sleeps through a real timeout.
//
// It owns the seam and Wall, nothing else: it imports the standard library
// only, and the fake tests pass is testsupport's, not here.
package clock
