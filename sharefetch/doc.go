// Package sharefetch serves KIP-932's data path: ShareFetch (records read
// from Queen and acquired for a member, with the acknowledgements it
// piggy-backs) and ShareAcknowledge, for any share-partition on any node.
//
// It owns:
//   - a request's walk: the share session step (package sharesession), the
//     membership check (Members), topics named by id, per-partition
//     refusals, acknowledgements applied before anything is read, the
//     records read from each share-partition's next fetch offset (package
//     fetchread's fill, under the response and node budgets, as Fetch reads
//     them), their acquisition (package sharepartition: one fenced KV write
//     per partition carrying the partition's acknowledgements too), the
//     answer's AcquiredRecords cut at batch_size, and the long poll: up to
//     max_wait_ms, Queen's own long poll on partitions waiting for new
//     records, short bounded sleeps while nothing is acquirable for want of
//     locks (records held by others, the in-flight window full);
//   - the node's cache of share-partition handles (bounded, a handle
//     evicted is only reloaded);
//   - the release of what a member holds when its session ends (epoch -1,
//     or its connection closed) or it leaves the group (ReleaseMember);
//   - the share metrics' events (Observer).
//
// It does not own, and must not reach for: the wire's framing or version
// gate (node hands it decoded requests and takes the answers), share-group
// membership and assignment (a Members interface answers whether a member
// is current), group configs (a Configs interface answers each group's
// sharepartition.Config and share.auto.offset.reset), share-partition state
// itself (package sharepartition is the only writer), or the fault table
// beyond mapping a failed Queen call through package faults.
package sharefetch
