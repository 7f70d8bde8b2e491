// Package supervisor is embedded mode (seed 000, "Embedded in the broker"):
// the broker, here queen-dev, spawns the facade binary as a child process
// and keeps it running.
//
// It owns: resolving and checking the child binary (QUEEN_KAFKA_BIN, a
// boot refusal when it is not an executable file; the three variables the
// broker reads for it, QUEEN_KAFKA_EMBEDDED, QUEEN_KAFKA_BIN and
// QUEEN_KAFKA_SHUTDOWN_GRACE_MS, are declared and read by package config,
// as is the refusal of EMBEDDED without QUEEN_KAFKA_ADVERTISED_ADDR); the
// child's environment (the broker's own, verbatim, less the broker's
// secrets, with QUEEN_URL set to the loopback of the address the broker
// actually bound unless the operator set a non-empty QUEEN_URL); the child's life: its own process
// group, PR_SET_PDEATHSIG=SIGKILL on Linux, restart on a backoff that
// doubles from 1 s to 30 s and resets after an hour of healthy running
// (but never after an exit with config.ExitConfig, a configuration the
// child refused at boot and would refuse again: phase failed), and
// a stop that is SIGTERM to the group then SIGKILL after the grace; the
// forwarding of the child's stdout and stderr into the broker's log
// (escape sequences and control bytes stripped, 4 KiB a line, 200 lines per
// 10 s window with a suppressed count); and the Status block that the
// broker's GET /status shows as "kafka".
//
// It does not own and must not touch: what the facade does with its
// variables (package config validates every QUEEN_KAFKA_* the child reads;
// embedded mode only checks that QUEEN_KAFKA_ADVERTISED_ADDR is present),
// the broker's HTTP routes (queen/dev serves /status and asks for the block
// through dev.Options.Status), or the broker's own configuration and
// shutdown order (cmd/queen-dev decides when Start and Stop run). It never
// reads the broker's token table beyond "is auth on", which its caller
// passes in.
//
// Time comes through Clock, so tests drive the backoff, the hour of
// healthy running, the grace window and the log window without sleeping.
package supervisor
