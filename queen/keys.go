package queen

import (
	"strconv"
	"strings"
)

// Esc is §10's escaping: every byte outside [A-Za-z0-9._-] becomes %XX
// (upper-case hex), so ':' never appears raw inside a key component.
func Esc(s string) string { return percentEncode(s, plainByte) }

// percentEncode writes every byte of s that keep refuses as %XX (upper-case
// hex); s itself comes back, unallocated, when keep takes every byte.
func percentEncode(s string, keep func(byte) bool) string {
	i := 0
	for i < len(s) && keep(s[i]) {
		i++
	}
	if i == len(s) {
		return s
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s) * 3)
	b.WriteString(s[:i])
	for ; i < len(s); i++ {
		c := s[i]
		if keep(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// Unesc reverses Esc; ok is false for a malformed escape.
func Unesc(s string) (string, bool) {
	if !strings.Contains(s, "%") {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", false
		}
		v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil {
			return "", false
		}
		b.WriteByte(byte(v))
		i += 2
	}
	return b.String(), true
}

func plainByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

// MaxKeyBytes is the KV key ceiling (§7.3).
const MaxKeyBytes = 512

// Key families of §10. They are mutually prefix-free.
const (
	PrefixGroup    = "qk:group:"
	PrefixGroups   = "qk:groups:"
	PrefixFence    = "qk:fence:"
	PrefixNode     = "qk:node:"
	PrefixTxn      = "qk:txn:"
	PrefixTopicCfg = "qk:topiccfg:"
	// PrefixTxnStage is cluster mode's transaction stage (issue 9): the
	// records and offsets of an open transaction, written by whichever
	// node received them and read by the transactional id's owner at
	// EndTxn(commit). Layout and expiry: TxnStagePrefix.
	PrefixTxnStage = "qk:txnstage:"
	// PrefixTxnPending is cluster mode's index of offsets staged by open
	// transactions, per group, so that the group's coordinator answers
	// OffsetFetch's require_stable (KIP-447). Layout: TxnPendingKey.
	PrefixTxnPending = "qk:txnpend:"
	// PrefixConsumerGroup is a KIP-848 consumer-protocol group's state
	// (package consumergroup): what must survive an owner move. Layout:
	// ConsumerGroupPrefix.
	PrefixConsumerGroup = "qk:cg:"
	// PrefixShare is a share group's share-partition states (KIP-932),
	// one row per partition: ShareStateKey.
	PrefixShare = "qk:share:"
	// PrefixShareGroup is a KIP-932 share group's membership (package
	// sharegroup): its epochs and members. Layout: ShareGroupPrefix.
	PrefixShareGroup = "qk:sg:"
	// PrefixGroupCfg is a group's GROUP config resource overrides (KIP-848 /
	// KIP-932 group configs, package groupconfig): GroupCfgKey.
	PrefixGroupCfg = "qk:groupcfg:"
)

// ProducerIDsKey is the one row of the producer id counter,
// {"next":<first id no node has reserved>}: each node reserves a block of
// ids past it by compare-and-set (package producer). It is a single key,
// not a family, and shares no prefix with the families above.
const ProducerIDsKey = "qk:producerids"

// GroupOffsetKey is qk:group:<esc group>:<esc topic>:<partition>.
func GroupOffsetKey(group, topic string, partition int32) string {
	return PrefixGroup + Esc(group) + ":" + Esc(topic) + ":" + strconv.FormatInt(int64(partition), 10)
}

// GroupOffsetPrefix is qk:group:<esc group>: (every committed offset of a group).
func GroupOffsetPrefix(group string) string { return PrefixGroup + Esc(group) + ":" }

// ParseGroupOffsetKey splits a qk:group: key back into its parts.
func ParseGroupOffsetKey(key string) (group, topic string, partition int32, ok bool) {
	rest, found := strings.CutPrefix(key, PrefixGroup)
	if !found {
		return "", "", 0, false
	}
	parts := strings.Split(rest, ":")
	if len(parts) != 3 {
		return "", "", 0, false
	}
	g, ok1 := Unesc(parts[0])
	t, ok2 := Unesc(parts[1])
	p, err := strconv.ParseInt(parts[2], 10, 32)
	// Only the canonical decimal GroupOffsetKey writes: "+3", "03" and "-0"
	// name no partition of ours.
	if !ok1 || !ok2 || err != nil || p < 0 || strconv.FormatInt(p, 10) != parts[2] {
		return "", "", 0, false
	}
	return g, t, int32(p), true
}

// TxnPendingKey is qk:txnpend:<esc group>:<esc topic>:<partition>:<txn>:
// transaction txn ("<pid>.<epoch>.<number>") has an offset of the partition staged,
// {"id":<transactional id>,"pid":…,"epoch":…,"txn":<number>} (package txn),
// written beside the stage's o: row with its ttl. It is a hint: the
// transaction's qk:txn: row says whether it is still open.
func TxnPendingKey(group, topic string, partition int32, txn string) string {
	return TxnPendingGroupPrefix(group) + Esc(topic) + ":" + strconv.FormatInt(int64(partition), 10) + ":" + txn
}

// TxnPendingGroupPrefix is qk:txnpend:<esc group>: (every pending row of a group).
func TxnPendingGroupPrefix(group string) string { return PrefixTxnPending + Esc(group) + ":" }

// ParseTxnPendingKey splits a qk:txnpend: key back into its group, topic
// and partition.
func ParseTxnPendingKey(key string) (group, topic string, partition int32, ok bool) {
	rest, found := strings.CutPrefix(key, PrefixTxnPending)
	if !found {
		return "", "", 0, false
	}
	cut := strings.LastIndexByte(rest, ':')
	if cut < 0 {
		return "", "", 0, false
	}
	return ParseGroupOffsetKey(PrefixGroup + rest[:cut])
}

// GroupIndexKey is qk:groups:<esc group>.
func GroupIndexKey(group string) string { return PrefixGroups + Esc(group) }

// FenceValue is the value of a qk:fence:<group> row: the node and process
// (incarnation) that took the group last, and the generation (a classic
// group's) or group epoch (a consumer-protocol group's) it carried.
// Package coordinator and package consumergroup both write it, so that
// each recognises the other's writes from the same process as its own.
type FenceValue struct {
	Node        int32  `json:"node"`
	Incarnation string `json:"incarnation"`
	Generation  int32  `json:"generation"`
	TS          int64  `json:"ts"`
}

// FenceKey is qk:fence:<esc group>.
func FenceKey(group string) string { return PrefixFence + Esc(group) }

// NodePrefix is qk:node:<cluster>: (cluster names are not escaped).
func NodePrefix(cluster string) string { return PrefixNode + cluster + ":" }

// NodeKey is qk:node:<cluster>:<id>.
func NodeKey(cluster string, id int) string { return NodePrefix(cluster) + strconv.Itoa(id) }

// TxnKey is qk:txn:<esc transactional.id>.
func TxnKey(txnID string) string { return PrefixTxn + Esc(txnID) }

// TxnStagePrefix is qk:txnstage:<esc id>:<pid>:<epoch>:<txn>: — every row
// staged for transaction number txn (the qk:txn: row's seq+1 while it is
// "ongoing") of producer pid at epoch. Below it (cluster mode only):
//
//	r:<esc topic>:<partition>:<base sequence, 10 digits>:<row, 4 digits>
//	    {"q":<topic>,"p":<partition>,"b":<record bytes>,"n":<rows>,"d":[[<dedup key>,<envelope>]…]},
//	    a batch's records, whole, in values of at most 64 KiB ("d" a base64
//	    string of the same array's text cut anywhere: a batch with a record
//	    past a value, or rows of an older build); a retried batch rewrites
//	    the same keys, at any node; a committed stage's rows are put null
//	    with a 1 s ttl (txn's cleanup);
//	o:<esc group>:<esc topic>:<partition>
//	    {"g":<group>,"q":<topic>,"p":<partition>,"offset":<n>,"metadata":"…","pt":"…"},
//	    a TxnOffsetCommit's offset (a repeat replaces it);
//	x:<node>  a cap refused part of the transaction: it can only abort.
//
// Every row is put with ttlSeconds = the transaction's timeout plus a
// margin, so a stage nobody commits (abort, crash, fencing) expires; the
// owner never commits a transaction past its timeout, so no row of one it
// commits has expired. The number in the key makes the rows of a decided
// transaction unreachable at once, whether or not their cleanup landed.
func TxnStagePrefix(txnID string, pid int64, epoch int16, txn uint64) string {
	return PrefixTxnStage + Esc(txnID) + ":" + strconv.FormatInt(pid, 10) + ":" + strconv.FormatInt(int64(epoch), 10) + ":" + strconv.FormatUint(txn, 10) + ":"
}

// TopicCfgKey is qk:topiccfg:<topic> (topic names are validated, not escaped).
func TopicCfgKey(topic string) string { return PrefixTopicCfg + topic }

// ConsumerGroupPrefix is qk:cg:<esc group>: — every row of one KIP-848
// consumer-protocol group's state. Below it:
//
//	g           {"epoch":…,"assignmentEpoch":…,"topicsHash":…,"ts":…}, the group
//	            epoch, the target assignment's epoch and what the subscribed
//	            topics' metadata was when it was computed;
//	m:<esc id>  one member: ids, subscription, member epoch, state, assigned
//	            and pending-revocation partitions, and its target assignment.
//
// The g row is written by compare-and-set on its own version (the owner's
// fence for the state) and a new owner rewrites it together with
// qk:fence:<group> when it loads the group, so a previous owner's next
// state write or offset commit fails.
func ConsumerGroupPrefix(group string) string { return PrefixConsumerGroup + Esc(group) + ":" }

// ConsumerGroupMetaKey is qk:cg:<esc group>:g.
func ConsumerGroupMetaKey(group string) string { return ConsumerGroupPrefix(group) + "g" }

// ConsumerGroupMemberKey is qk:cg:<esc group>:m:<esc member id>.
func ConsumerGroupMemberKey(group, member string) string {
	return ConsumerGroupPrefix(group) + "m:" + Esc(member)
}

// ShareGroupPrefix is qk:sg:<esc group>: — every row of one share group:
// ShareGroupMetaKey (epochs, subscription metadata) and one
// ShareGroupMemberKey per member.
func ShareGroupPrefix(group string) string { return PrefixShareGroup + Esc(group) + ":" }

// ShareGroupMetaKey is qk:sg:<esc group>:g.
func ShareGroupMetaKey(group string) string { return ShareGroupPrefix(group) + "g" }

// ShareGroupMemberKey is qk:sg:<esc group>:m:<esc member id>.
func ShareGroupMemberKey(group, member string) string {
	return ShareGroupPrefix(group) + "m:" + Esc(member)
}

// ShareStateKey is qk:share:<esc group>:<esc topic>:<partition>: one
// share-partition's state (SPSO and in-flight records, package
// sharepartition's encoding), written with compare-and-set on every change.
func ShareStateKey(group, topic string, partition int32) string {
	return PrefixShare + Esc(group) + ":" + Esc(topic) + ":" + strconv.FormatInt(int64(partition), 10)
}

// ShareStatePrefix is qk:share:<esc group>: (every share-partition of a group).
func ShareStatePrefix(group string) string { return PrefixShare + Esc(group) + ":" }

// ParseShareStateKey splits a qk:share: key back into its parts.
func ParseShareStateKey(key string) (group, topic string, partition int32, ok bool) {
	rest, found := strings.CutPrefix(key, PrefixShare)
	if !found {
		return "", "", 0, false
	}
	return ParseGroupOffsetKey(PrefixGroup + rest)
}

// GroupCfgKey is qk:groupcfg:<esc group>: one group's config overrides
// ({"v":1,"c":{<name>:<value>,...}}, package groupconfig), written with
// compare-and-set so that two concurrent alters never lose one.
func GroupCfgKey(group string) string { return PrefixGroupCfg + Esc(group) }
