package hashring

import (
	"slices"
	"strconv"

	rendezvous "github.com/dgryski/go-rendezvous"
)

// Ring is a snapshot of the live node ids ready for many lookups. A Ring is
// immutable and safe for concurrent use; build a new one when the live set
// changes (New is cheap: one hash per node).
type Ring struct {
	ids []int32 // ascending, unique
	rdv *rendezvous.Rendezvous
}

// New builds a Ring over live. Order and duplicates in live do not matter:
// the ids are sorted and de-duplicated first, which is what makes every
// answer independent of the order in which nodes were seen (rendezvous
// breaks a weight tie by position, and sorting fixes the position).
func New(live []int32) *Ring {
	ids := slices.Clone(live)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = strconv.FormatInt(int64(id), 10)
	}
	return &Ring{ids: ids, rdv: rendezvous.New(names, Hash)}
}

// Nodes returns the live ids in ascending order (a copy).
func (r *Ring) Nodes() []int32 { return slices.Clone(r.ids) }

// Len is the number of live nodes.
func (r *Ring) Len() int { return len(r.ids) }

// Contains reports whether id is live in this ring.
func (r *Ring) Contains(id int32) bool {
	_, found := slices.BinarySearch(r.ids, id)
	return found
}

// Without is the ring of the other live nodes: the owners a node that
// cannot vouch for its own membership points clients to, since its peers
// drop it once its row expires (Metadata's leaders, FindCoordinator's
// redirect). It is r itself when id is not live.
func (r *Ring) Without(id int32) *Ring {
	if !r.Contains(id) {
		return r
	}
	return New(slices.DeleteFunc(slices.Clone(r.ids), func(n int32) bool { return n == id }))
}

// Owner returns the node that owns key (a consumer group id), and false when
// no node is live.
func (r *Ring) Owner(key string) (int32, bool) {
	if len(r.ids) == 0 {
		return 0, false
	}
	id, err := strconv.ParseInt(r.rdv.Lookup(key), 10, 32)
	if err != nil {
		// The names were formatted from int32 ids by New; a parse failure is
		// impossible, and answering "nobody" is the safe way to say so.
		return 0, false
	}
	return int32(id), true
}

// Leader is the node a partition's leader is advertised as: the owner of
// PartitionKey(topic, partition), so leaders spread over the live nodes the
// same way groups do.
func (r *Ring) Leader(topic string, partition int32) (int32, bool) {
	return r.Owner(PartitionKey(topic, partition))
}

// Replicas is a partition's replica (and ISR) list: every live node, the
// leader first and the rest ascending. Every node serves every partition
// from the one shared store, so every live node truly is an in-sync replica.
// It is nil when no node is live.
func (r *Ring) Replicas(topic string, partition int32) []int32 {
	leader, ok := r.Leader(topic, partition)
	if !ok {
		return nil
	}
	out := make([]int32, 0, len(r.ids))
	out = append(out, leader)
	for _, id := range r.ids {
		if id != leader {
			out = append(out, id)
		}
	}
	return out
}

// Controller is the lowest live id, and false when no node is live.
func (r *Ring) Controller() (int32, bool) {
	if len(r.ids) == 0 {
		return 0, false
	}
	return r.ids[0], true
}

// PartitionKey is the ownership key of one partition: topic + "/" +
// partition. '/' cannot occur in a topic name, so no two partitions share
// a key.
func PartitionKey(topic string, partition int32) string {
	return topic + "/" + strconv.FormatInt(int64(partition), 10)
}

// Owner is New(live).Owner(key) for a single lookup.
func Owner(live []int32, key string) (int32, bool) { return New(live).Owner(key) }
