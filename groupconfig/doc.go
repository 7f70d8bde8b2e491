// Package groupconfig is Kafka's GROUP config resource (ConfigResource type
// 32): the per-group overrides of KIP-848 and KIP-932 (consumer.*, share.*,
// streams.*), with the names, types, defaults, bounds and refusal messages
// of Kafka 4.2's GroupConfig, kept one Queen KV row per group
// (queen.GroupCfgKey).
//
// It owns:
//   - the definitions (Names): each config's type, its Kafka default or the
//     broker-level setting behind it (Broker), its ConfigDef floor and the
//     broker-level bounds GroupConfig validates against;
//   - validation of a whole set of overrides as Kafka's GroupConfig.validate
//     does it (names, then types and floors, then bounds, then session
//     against heartbeat), with Kafka's sentences;
//   - the alter semantics of IncrementalAlterConfigs (SET, DELETE; APPEND
//     and SUBTRACT refused, no group config being a list) and of the legacy
//     full-replacement AlterConfigs, and validate_only;
//   - the row: its encoding, and the compare-and-set that makes two nodes
//     altering one group at once both land (the loser re-applies its
//     operations to the winner's row) or be refused, never lose one;
//   - the DescribeConfigs entries: value, source (GROUP_CONFIG for an
//     override, else the broker synonym's), synonyms and documentation;
//   - Values: the effective typed settings a group's members run with
//     (Store.Get), cached per KV client and group for at most a TTL.
//
// It takes a narrow KV interface (*queen.Client satisfies it) and the
// facade's broker-level settings as plain values, and must not reach for:
//   - the node, connections or the wire's framing: handlers call it (it
//     fills kmsg resources but never encodes a response);
//   - group membership or share-partition state: the packages that run
//     groups read Values through Store.Get;
//   - topics and broker configs: package catalogue and package configres.
package groupconfig
