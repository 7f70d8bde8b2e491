// Package dev is queen-dev, the project's Queen-compatible development
// broker. It is NOT Queen: it serves exactly the HTTP routes of the contract
// the facade uses (queen-api.md §1: queue list, configure, delete,
// push, fetch, kv, transaction, auth/me), the native consume routes of
// queen-api-consume.md (pop in its queue, partition and discovery forms,
// ack, ack batch, lease extension, §2–§4; the dead-letter routes and
// message retry, §5; the consumer-group list, per-group, lagging, delete,
// subscription and seek routes, §6), plus its own GET /health and
// GET /status (Options.Status adds blocks to the latter: cmd/queen-dev's
// embedded mode adds "kafka"), with the contract's status codes and
// bodies, so that the facade and its tests run against a real process.
// cmd/queen-dev is the binary; Options{} (no Dir) is a memory-only broker
// for unit tests behind httptest.NewServer(b.Handler()).
//
// # Storage
//
// Everything is in an embedded storage engine, cockroachdb/pebble (an LSM
// tree with a group-committed write-ahead log), in Dir; with Dir empty it
// runs on pebble's in-memory file system. keys.go is the layout: records
// a batch to a key, the records one request stored in one partition in one
// checksummed value keyed by (queue id, partition, first offset), read
// through records.go's iterator of (offset, record) from any offset (a
// SeekLT finds the batch holding it); the producer-dedup index by
// (queue id, partition, transactionId) plus an age index of one key per
// batch; KV
// rows by (tenant, namespace, key) plus an expiry index, queue metadata,
// partition metadata (log end, log start, retained bytes, last commit
// time), the pop cursors, dead letters and group subscriptions, and the
// store-wide KV version counter. Memory holds only the
// metadata of queues and partitions (and parked fetches), loaded at boot
// by a scan of the metadata keys: boot reads no record and no KV row, so
// neither memory nor boot time grows with the data stored. Fetch reads
// ranges of batch keys through a bounded block cache (Options.CacheBytes,
// QUEEN_DEV_CACHE_SIZE, 64 MiB by default) beside at most two 8 MiB
// memtables (small, so that a boot after a crash has little log to
// replay). Values of 256 bytes and more (batches) are separated into blob
// files written once, so compactions rewrite only keys (see store.go). The
// push route reuses its engine batches (store.go's batchCache).
//
// Each request that changes anything is ONE pebble batch (a transaction's
// KV rider and records included), so it applies entirely or not at all.
// It is decided and applied under Broker.mu, which makes it visible at
// once (pebble's ApplyNoSyncWait with Sync), and its log record is waited
// for outside the lock, where pebble's log writer writes the records of
// concurrent batches with one write and one sync (group commit). What the
// wait covers is Options.FsyncAlways (QUEEN_DEV_FSYNC):
//
//   - By default, the write: a request is acknowledged once the write(2)
//     of its log record has returned, so it survives a kill -9 of
//     queen-dev (the record is in the kernel's page cache), not an OS
//     crash or power loss. The log is fsynced in the background every
//     Options.FsyncInterval (1 s by default, like PostgreSQL's
//     wal_writer_delay with synchronous_commit off), so an OS crash loses
//     about that much at most; sstables, blob files and the manifest are
//     fsynced as pebble asks, and a log file is fsynced when pebble closes
//     it for the next one. This is Apache Kafka's own default: a produce is
//     acknowledged without an fsync (log.flush.interval.messages is
//     Long.MAX_VALUE), its durability coming from the page cache and
//     replication. It is pebble's machinery, not a log of queen-dev's: the
//     store's file system (walsync.go) makes the log files' Sync return at
//     once, and pebble's log writer releases a synced batch's waiters
//     after its write and that Sync (record.LogWriter.flushPending).
//   - With FsyncAlways (QUEEN_DEV_FSYNC=always), the fsync: a request is
//     acknowledged only after its record is on disk, which survives a power
//     loss too, at an fsync's latency per acknowledgement (concurrent
//     requests share one).
//
// Readers wait likewise until every batch applied before their read is
// written (or synced), so no answer ever shows state a crash of
// queen-dev could take back. If a commit, a write or an fsync (the
// background one included) fails the broker stops acknowledging anything
// (500), since what it showed may not be on disk. Pebble's own LOCK file keeps two
// processes (and two brokers in one process) off one directory. On boot
// pebble replays its log: a torn tail (a record cut short, zeros, garbage
// after the last intact record: what a crash during the last write
// leaves) ends the replay, and nothing in it was acknowledged. A damaged
// manifest refuses the boot (cmd/queen-dev exits 1 with one log line naming
// the directory). Unlike the hand-rolled log before it, which refused a
// boot when intact frames followed a damaged one, pebble ends the replay of
// its newest log file at damage in its middle too (disk corruption, not a
// crash, makes that: a test flipping one byte halfway through a log of
// 1,000 synced records kept the 495 before it). A directory still holding
// the old log, wal.log, is refused with what to do (its format is no
// longer read), and so is a store in the layout of one key per record
// (kinds r and e), which is not migrated. Retention retires whole batches
// (a batch's records share one commit time). Retention and the dedup
// and KV expiry sweeps delete with range deletions and point deletes; the
// engine's compactions reclaim the space in the background.
//
// Why pebble. bbolt (a B+tree in one mmapped file) commits with an fsync
// per transaction and serialises writers: a request per fsync, or the
// broker's own batching machinery in front of it, which is what the engine
// is meant to replace; its file never shrinks, and a 10 GB store is 10 GB
// of mapped pages the kernel counts in the process's RSS while they are
// hot. badger (an LSM with values in a separate log) group-commits too,
// but its value log needs its own garbage collection runs, which a
// delete-heavy queue (retention) makes constant work, and its caches and
// memtables are sized for servers (about 1 GiB by default). pebble has
// group commit of synced batches, range deletions (a deleted queue or a
// retired prefix of a partition is one tombstone), ordered iterators for
// the dedup lookups of a batch, one bounded block cache, and is the engine
// of CockroachDB.
// pebble/v2 rather than v1: v1 is in maintenance; v2 is the line CockroachDB
// ships.
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
//     reissued). Ops of one call are written to one indexed batch that
//     each op reads through, so a lost required precondition discards the
//     batch and restores everything. incr (unused by the
//     facade) adds delta to a numeric value (absent = 0); a non-numeric value
//     answers applied:false reason "type", a result outside min/max answers
//     applied:false reason "bounds". expiresAt/updatedAt use the record-time
//     format.
//   - Transactions: the KV rider applies first, then the "ack" operations
//     (the ack route's fields, in the same batch), then the records; flat
//     result slots follow the operations' order. An ack that does not
//     succeed rolls the unit back (reason ack_rejected). Timers and
//     requiredLeases are refused with 400. A rollback on a lost precondition reports
//     failedIndex, kvReason, version and value, or, with
//     Options.BareVerdicts, all four null, as §7.4 lets a server that could
//     not report them answer.
//   - Pop/ack: a cursor per (queue, partition, consumer group) is one
//     store row (kind c: last offset done, lease, retry count), written in
//     the request's batch and acknowledged after its fsync like any write.
//     Pop leases the span it delivers (leaseSeconds, else the queue's
//     leaseTime); the same group skips a leased partition; an expired lease
//     redelivers from the cursor and charges nothing. Ack resolves
//     (partitionId, transactionId) among the records from 10,000 below the
//     cursor to the end of the leased span; failed nacks charge one budget
//     per (partition, group) up to retryLimit, then that one message is
//     stored as a dead letter (kind z: a snapshot of its ids, time and
//     payload, the nack's error or "Retries exhausted", the retries spent)
//     and the cursor moves past it. partitionId is a name-based UUID of
//     (queue id, partition). The discovery pop (?namespace=&task=, at
//     least one) claims across every matching queue, by queue name then
//     partition, each partition under its own queue's leaseTime. Long
//     polls (wait=true) are woken by a write to a partition they looked
//     at, new partitions and queues by the 200 ms recheck. Seek (toEnd, or
//     just before the first record at or after a timestamp) releases the
//     lease and resets the budget; deleting a group drops its cursors (the
//     next pop seeds them again). Deleting a queue drops its cursors, their
//     lease rows, its dead letters and its subscriptions. Pop, ack and the
//     views take the read level, the DLQ writes, delete, seek and the
//     subscription update read-write (Queen's are unverified).
//   - Subscriptions (§2, §6; kind s, one per (queue, group), as Queen's
//     consumer_groups_metadata row read in the contract's sources P and
//     C): a group's first queue-form or discovery pop on a queue
//     stores what it asked for — mode "all" (timestamp the epoch), "new"
//     (subscriptionMode=new or subscriptionFrom=now: the pop's time) or
//     "timestamp" (subscriptionFrom=ISO, which wins over mode new) — and
//     seeds a cursor on every partition of the queue the group has none
//     on by that intent; later first contacts (a partition created after,
//     a cursor deleted with deleteMetadata=false) are seeded from the
//     stored timestamp, before the first record stored at or after it.
//     The partition form stores none (Queen's pinned pop registers none)
//     but follows a stored one; without one it follows its own intent.
//     Queue mode (no consumerGroup, or __QUEUE_MODE__ named) ignores
//     subscriptionMode and subscriptionFrom and stores "all", as Queen
//     registers it. A pop of a queue that does not exist stores
//     nothing (Queen creates the queue; queen-dev does not). POST
//     /consumer-groups/{group}/subscription {"subscriptionTimestamp":ISO}
//     (absent or "" → 400 "subscriptionTimestamp is required", bad JSON →
//     400 "bad body: …", unparsable → 500 "subscription failed: invalid
//     timestamp …", as the seek's) sets the timestamp of every stored
//     subscription of the group in the tenant, keeps the mode, moves no
//     cursor and releases no lease (existing cursors are never re-seeded),
//     and answers 200 {"success":true,"consumerGroup","newTimestamp" (the
//     body's string),"rowsUpdated"}: Queen's SP JSON, so an unknown group
//     is rowsUpdated 0, not 404. DELETE of a group (or of it on one
//     queue) deletes its subscriptions with deleteMetadata (the default).
//     The list view answers subscriptionMode, subscriptionTimestamp and
//     subscriptionCreatedAt of a "queen" row from it (nulls without one,
//     and on every "kafka" row); their string form, unverified, is the
//     record-time format. The per-group view, whose shape is unverified,
//     carries the same three fields on each queue's entry (additive).
//   - Dead letters: a row's id is a name-based UUID of its key. GET
//     /api/v1/dlq lists newest first (queue, consumerGroup, limit 100,
//     offset 0; total is the page's length, as Queen answers); DELETE
//     needs ?queue=. A replay (by id, optionally to another queue or
//     partition; or POST /messages/{pid}/{txId}/retry, the newest row of
//     that address, in place) pushes the snapshot with transactionId
//     dlq:<id> and deletes the row in one batch; inside the dedup window
//     it is a duplicate: nothing written, the row kept.
//   - Consumer groups (list view): one row per (group, queue, kind); "queen" rows from
//     the pop cursors (lag = end − (last done + 1); "Dead" until the group
//     consumes), "kafka" rows from the tenant's live qk:group: rows in
//     namespace queen-kafka that name a written partition of an existing
//     queue (lag = end − committed, never below 0; never "Dead"); maxTimeLag
//     is the age of the first unread record, "Lagging" past 300 s. The
//     lagging (minLagSeconds, 3600) and per-group views read the same two
//     stores with pending = end − max(first unread, log start) and a kind
//     on every row; in the per-group view, keyed by queue, a native group
//     wins over a Kafka group of the same name on the same queue.
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
//     authme | groups (the consumer-group routes) | pop | ack (ack, ack
//     batch, lease extension) | dlq (the DLQ routes and message retry) |
//     any (required)
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
