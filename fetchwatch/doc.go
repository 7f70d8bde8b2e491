// Package fetchwatch keeps the partitions of a wide fetch session watched at
// Queen between fetches, the way a native Queen consumer of many
// partitions does: one long poll per group of partitions (256 by default;
// Queen's fetch route takes at most 1,024), parked until a write lands on
// one of them. A client without sessions, which names every partition in
// every fetch, is watched the same way once its partitions are given a
// session's slots by key (Round.Assign); the node keeps that watch with
// the connection.
//
// Why: Queen's fetch route takes 1,024 partitions a call. A consumer of
// 10,000 partitions asks for all of them in every Fetch, so answering each
// Fetch afresh costs ten calls, and a long poll over ten calls either waits
// on one chunk at a time (a record in another waits its turn) or cancels
// nine calls, and their connections, whenever one answers. A Watch instead
// leaves each group's call parked across the session's fetches: a Fetch
// takes what the calls that completed read, reads at once only the
// partitions whose state it does not know (new to the session, just
// answered records, or moved by the client), and otherwise waits on the
// calls already parked. A trickle of records then costs one parked call per
// record, as it does a native consumer, instead of ten calls per Fetch.
//
// It owns:
//   - a session's groups, their parked calls (maxWait Config.Wait, minBytes
//     1, each entry asking Config.CallBytes shared over the group, so a
//     parked answer holds at most that plus the one record Queen always
//     delivers), and the answers those calls brought that no fetch has
//     taken yet;
//   - what it knows of each partition: the offset it is watched at, and
//     whether a read there found nothing (cold) or it must be read again
//     (a partition is only parked cold: a call parked where records wait
//     would answer at once, and again, for nothing);
//   - the node-wide bound on parked calls (Calls), and each identity's share
//     of it (a quarter), past which a fetch is told to wait some other way;
//   - a watch's end: Close cancels every call, and the fetch session it is
//     attached to (fetchsession.Attachment) closes it with the session (the
//     node closes a sessionless client's with its connection). A
//     call stays parked only while its session is fetched: a call that
//     answers nothing, past Config.Wait after the session's last fetch, is
//     not parked again until its next.
//
// It does not own, and must not reach for:
//   - the wire, budgets and answers: package fetchread fills the response
//     from what a Round hands it, applies the partition and response
//     budgets, and reads the partitions a Round says to read (its own
//     chunked path); package node checks and lays out what it answers;
//   - the session protocol: package fetchsession decides what a fetch is
//     and which partitions an answer carries;
//   - which topics exist or who may read them: the node checks every
//     partition of every fetch before it is named to a Round, and a
//     partition no longer named is dropped from the watch;
//   - durability: a watch is memory, lost with the process or the session,
//     and holds nothing a Queen read would not give again. An answer older
//     than Config.Fresh is read again rather than used.
package fetchwatch
