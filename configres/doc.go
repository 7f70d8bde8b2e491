// Package configres is Kafka's config resources as the DescribeConfigs and
// AlterConfigs/IncrementalAlterConfigs APIs see them, beyond topics: the
// broker's own entries and their synonyms, and the checks every alter
// passes before a topic is touched.
//
// It owns:
//   - the BROKER resource (DescribeBroker): the broker configs the facade
//     holds and enforces, read-only, each sourced from the facade's
//     configuration or Kafka's default, with their synonyms and
//     documentation, and Kafka's ConfigHelper answers for the empty name
//     and for another broker's id;
//   - the BROKER_LOGGER resource (DescribeBrokerLogger): the id checks, and
//     no loggers;
//   - Kafka's ConfigAdminManager.preprocess (Preprocess): duplicate
//     resources and keys, null values, unknown operations, broker ids, and
//     the refusal of every broker config as static.
//
// It takes plain values (the facade's configuration, this node's broker
// id, the request's resources) and must not reach for:
//   - the node, its connections or the wire's framing: the handlers
//     (package node) call it and lay out the response;
//   - topics: their configs, records and catalogue are package catalogue's,
//     and altering one is the handler's, after Preprocess lets it through;
//   - Queen: nothing here reads or writes it, since every broker config is
//     the facade's environment, read at boot.
package configres
