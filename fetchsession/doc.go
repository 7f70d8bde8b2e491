// Package fetchsession is the broker side of Kafka's incremental fetch
// sessions (KIP-227): one node's bounded cache of sessions, each the set of
// partitions a consumer fetches with the fetch offset and partition budget
// it last asked for, and the high watermark, log start offset and error it
// was last answered.
//
// It owns:
//   - the session protocol: what a request's (session id, epoch) pair means
//     (sessionless at epoch -1, a new session at epoch 0, the next fetch of
//     a session at epoch > 0), the session ids and epochs handed out, the
//     forgotten partitions, and the request-level refusals
//     FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH and
//     FETCH_SESSION_TOPIC_ID_ERROR (Begin);
//   - which partitions an incremental answer carries: those with records,
//     an error, or a high watermark or log start offset other than the one
//     last answered; the others are omitted, and partitions that were
//     answered move to the back of the session so the next response budget
//     goes to the others first, as Kafka does (Fetch.Answer);
//   - the bound: at most Config.Slots sessions (Kafka's
//     max.incremental.fetch.session.cache.slots, 1,000) evicted by Kafka's
//     FetchSessionCache rules, and at most Config.MaxPartitions partitions
//     cached across them, plus the counters the metrics read (Stats);
//   - a session's life as others see it: each partition's Slot (a small
//     number the node's watch indexes by), and the Attachment the node
//     keeps with a session, closed whatever ends the session (its client,
//     its id reopened, eviction, outgrowing the bound);
//   - the cost of a wide session's fetch: its partitions are copied into
//     one buffer the session reuses, and an incremental fetch that read
//     only some of them reports just those (Fetch.AnswerSome).
//
// It does not own, and must not reach for:
//   - the wire: package node's Fetch handler turns the decoded request
//     into a Request and lays the answer out; nothing here sees a kmsg
//     type;
//   - the data: a session holds no records and no offsets of its own, and
//     answers nothing from memory. What a fetch reads of Queen is the
//     node's: every partition is read from Queen, or watched there by a
//     long poll parked for the session (package fetchwatch, the session's
//     Attachment), in cluster mode too, where every node reads the same
//     store whichever node Metadata names the leader;
//   - which topics and partitions exist, or who may read them: the node
//     checks every partition of every fetch, cached ones included;
//   - durability: sessions live in this process only. A restarted node has
//     none, answers FETCH_SESSION_ID_NOT_FOUND, and the client starts over
//     with a full fetch, exactly as after a Kafka broker restart.
//
// A session is bound to the identity (SASL principal's tenant) of the
// connection that created it: another identity naming its id is answered
// FETCH_SESSION_ID_NOT_FOUND, so a session id is never a way to read
// another tenant's topic names.
package fetchsession
