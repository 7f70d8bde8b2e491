package node

// securityDisabled is Apache Kafka's own sentence when no authorizer is
// configured: Queen has no ACL model to answer anything else from.
const securityDisabled = "No Authorizer is configured."
