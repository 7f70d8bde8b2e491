package node

// securityDisabled is Apache Kafka's own sentence for CreateAcls and
// DeleteAcls when no authorizer is configured (AclApis raises
// SecurityDisabledException with it): Queen has no ACL model to answer
// anything else from.
const securityDisabled = "No Authorizer is configured."

// describeAclsDisabled is the sentence Kafka's DescribeAcls answers instead,
// when no authorizer is configured.
const describeAclsDisabled = "No Authorizer is configured on the broker"
