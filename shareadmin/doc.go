// Package shareadmin answers the KIP-932 share-group offsets admin APIs as
// Kafka 4.2's group coordinator and share coordinator answer them:
// DescribeShareGroupOffsets (each partition's share-partition start offset
// and, from v1, its lag), AlterShareGroupOffsets (set start offsets of an
// empty share group, creating its state) and DeleteShareGroupOffsets
// (forget an empty share group's state for whole topics). Each goes to the
// group's coordinator, its rendezvous owner in cluster mode
// (NOT_COORDINATOR elsewhere), as Kafka routes them.
//
// It owns the requests' checks and the answers' layout: group ids, the
// group's existence and emptiness (a group with share-partition state
// exists, as Kafka's AlterShareGroupOffsets creates the group it sets),
// topics and partitions that do not exist, and lag (the high watermark
// minus the start offset minus the in-flight records already acknowledged
// or archived, Kafka's formula).
//
// It must not reach for:
//   - the share-partition state's encoding or its writes: package
//     sharepartition's Describe, Alter and Delete do them;
//   - share-group membership: Groups (sharegroup.Manager) says whether a
//     group exists and is empty;
//   - the catalogue or the records: Topics and Log answer, adapters over
//     package catalogue and Queen's fetch route;
//   - the node and its connections: handlers call in with decoded requests.
package shareadmin
