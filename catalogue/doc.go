// Package catalogue is the facade's topic catalogue: which topics each
// caller identity can see, and what Kafka clients are told of them.
//
// It owns, per identity (Catalogues files one Catalogue per Caller
// identity, so two tenants never see each other's topics):
//   - the queue listing and the qk:topiccfg: records read from Queen, and
//     their refresh: at most once per TTL, shared by concurrent callers,
//     stale-while-revalidate under a slow Queen, backed off while Queen
//     fails (catalogue.go);
//   - cluster-mode syncing: a miss, a Metadata or a partition past the
//     known width refreshes at once, since another node may have created
//     or widened the topic; in any mode, a commit's miss refreshes, at
//     most once per MissRefreshFloor, since the topic may have been
//     created natively or through another facade (cluster.go);
//   - widths (never narrowing), topic ids (ids.go), topic names' rules
//     (names.go) and topic configs with their records (topic_config.go);
//   - a data-path request's verdicts on the topics it names (verdicts.go),
//     and the partitions another package may ask about (Topics).
//
// A caller reaches it with a Caller: an identity and a Queen client, never
// a connection. It must not reach for connections, framing or any other
// part of the wire, for request handlers, or for group and transaction
// state: it speaks Kafka's vocabulary (kmsg's Metadata request and config
// entries) but reads and writes no frame, and maps a Queen failure only
// through the Fault its caller gives it.
package catalogue
