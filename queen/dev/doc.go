// Package dev is queen-dev, the project's Queen-compatible development
// broker. It is NOT Queen: it serves exactly the HTTP routes of the contract
// the facade uses (queen-api.md §1: queue list, configure, delete,
// push, fetch, kv, transaction, auth/me) plus its own GET /health and
// GET /status (Options.Status adds blocks to the latter: cmd/queen-dev's
// embedded mode adds "kafka"), with the contract's status codes and
// bodies, so that the facade and its tests run against a real process.
// cmd/queen-dev is the binary; Options{} (no Dir) is a memory-only broker
// for unit tests behind httptest.NewServer(b.Handler()).
//
// # Storage
//
// State is authoritative in memory (queues, partitions as slices of records,
// KV namespaces with a sorted key index) and made durable by an append-only
// write-ahead log, Dir/wal.log. Each request that changes anything becomes
// ONE CRC-32C framed entry holding the outcomes it applied (offsets,
// versions, commit times — never the request), so replay needs no clock and
// no decisions, and a request replays entirely or not at all (a transaction's
// KV rider and records share a frame). One writer goroutine group-commits:
// while it writes and fsyncs one batch of frames the next batch collects, and
// every request is acknowledged only after the fsync of its batch; reads
// likewise wait until everything they could have observed is synced, so no
// answer ever shows state a crash could take back. A flock on Dir/LOCK keeps
// two processes off one log. If a write or fsync fails the broker stops
// acknowledging writes (500), since memory would otherwise be ahead of disk.
//
// # Torn tails and damage
//
// On boot the log is replayed frame by frame from byte 0. A frame is intact
// when its length is 1..1 GiB, it lies wholly inside the file and its CRC-32C
// matches. Replay stops at the first frame that is not intact, at byte X. The
// bytes from X to the end are a torn tail, and are truncated (with a warning
// line), only when fewer than 8 bytes remain after X or no intact frame whose
// body decodes starts at any byte after X: a crash during the last write
// leaves exactly that (a frame cut short, zeros, or a final frame whose CRC
// does not match), and what it leaves was never acknowledged, because
// nothing is acknowledged before its fsync. Anything else is damage: an
// intact frame after a bad one means writes were acknowledged after it, so
// boot refuses (cmd/queen-dev exits 1 with one log line naming the file and
// byte X, and leaves the file as it was) rather than silently drop them;
// move the log aside, or truncate it to X bytes to keep what precedes the
// damage. A CRC-valid frame that does not decode refuses the boot too. The
// search after X checksums at most 4 GiB (enough for any tail made of this
// log's own frames); a tail it cannot check is refused, never cut. Two
// consequences of the definition: damage to the final frame alone is cut as
// a torn tail, and a power loss that wrote the last batch's later pages but
// not its earlier ones is refused although nothing in it was acknowledged.
//
// Why not bbolt: a B+tree commit costs an fsync (two, with the freelist) per
// transaction and serialises writers; grouping requests into one bbolt
// transaction needs the same batching machinery as a log, and fetch would
// decode records from pages instead of handing out the pushed bytes. For a
// development broker whose data fits in memory, a log of outcomes is smaller,
// faster and easier to make crash-exact. Dead bytes (overwritten KV rows,
// deleted queues, retired records) stay in the log until the next boot: when
// a log over 64 MiB is more than twice the live state, boot rewrites it as a
// snapshot (temporary file, fsync, rename, directory fsync), so a crash during
// compaction leaves either the old log or the new one.
//
// # Connections
//
// Broker.Server is the http.Server cmd/queen-dev runs: headers within 10 s
// (a slowloris connection is closed), the whole request within 10 s plus
// MaxBodyBytes at 1 MiB/s, 2 min idle between requests on a keep-alive
// connection (longer than the facade's 90 s, so the client closes first), and
// a write budget that covers a 30 s long poll (120 s hang with faults on) and
// a 64 MiB answer at 1 MiB/s. The read deadline ends when the body is in, so
// long polls run to their maxWaitMs.
//
// # Semantics worth knowing
//
//   - Push: offsets per (queue, partition) from 0, contiguous per partition
//     within a request, assigned under one lock (concurrent pushes never
//     share an offset); a request is stored all-or-nothing. Dedup applies to
//     explicit transactionIds only, per (queue, partition), within the
//     queue's dedupWindowSeconds (0 disables); generated message ids are
//     fresh UUIDv7s.
//   - Fetch ts is the commit time of the push that stored the record,
//     never decreasing along a partition. Long polls park on the named
//     partitions and are woken by a write to one of them (re-checked every
//     200 ms). The first record of a call is always delivered; per-entry
//     maxBytes and the 64 MiB call budget are otherwise not exceeded.
//   - KV versions come from one store-wide counter (persisted, never
//     reissued). Ops of one call are applied directly with an undo log, so
//     a lost required precondition restores everything. incr (unused by the
//     facade) adds delta to a numeric value (absent = 0); a non-numeric value
//     answers applied:false reason "type", a result outside min/max answers
//     applied:false reason "bounds". expiresAt/updatedAt use the record-time
//     format.
//   - Transactions: the KV rider applies first, then the records; "ack"
//     operations, timers and requiredLeases are refused with 400 (queen-dev
//     has no lease consumption). A rollback on a lost precondition reports
//     failedIndex, kvReason, version and value, or, with
//     Options.BareVerdicts, all four null, as §7.4 lets a server that could
//     not report them answer.
//   - Retention (retentionEnabled + retentionSeconds ≥ 1) is a background
//     sweep raising logStartOffset; offsets are never renumbered and empty
//     partitions are never removed.
//   - Auth (Options.Tokens / QUEEN_DEV_TOKENS "tok=tenant[:ro|:wo|:rw|:admin]",
//     default role admin): missing or unknown bearer → 401, a role lacking the
//     route's level (§0.3) → 403; queues and KV are scoped per tenant. With
//     auth on, /auth/me answers a known token with the identity shape naming
//     its tenant as acting_cluster.id, anything else 401 auth_required; with
//     auth off it answers the standalone identity (acting cluster "local").
//
// # Fault injection
//
// Off unless Options.Faults (QUEEN_DEV_FAULTS=true), and only for loopback
// callers. POST /dev/faults {"rules":[…]} replaces the active rules, DELETE
// /dev/faults clears them, GET /dev/faults lists them with hit counts. With
// auth on (Options.Tokens), each of the three takes an admin token (a
// QUEEN_DEV_TOKENS entry with the :admin role, the default): missing or
// unknown 401, another role 403. Rules apply to every tenant's callers, so
// any tenant's admin token manages them. A rule:
//
//	{"route":"kv","token":"node-2-token","status":429,"retryAfter":2,"count":3}
//
// Fields:
//
//   - route: queues | configure | delete | push | fetch | kv | transaction |
//     authme | any (required)
//   - token: only callers presenting this bearer (so one facade among several
//     can be targeted); absent = every caller
//   - exactly one action: status (answer that status with a contract-shaped
//     body — KV {"error","reason","detail"}, transaction {"transactionId",
//     "success":false,…}, others {"error"} — plus Retry-After when
//     retryAfter (integer seconds) or retryAfterRaw (verbatim header) is
//     given); hang:true (hold the request until the client disconnects, the
//     broker drains or hangMs elapse — default 15000, max 120000 — then 504);
//     drop:true (close the connection without answering)
//   - count: requests to hit, then the rule disappears; 0 = until cleared
//
// The first matching rule wins; a faulted request never reaches the store.
package dev
