package node

import "github.com/queen-mq/queen-kafka/faults"

// saslFault is the fault table's SASL mapping under the name
// sasl_authenticate.go knows it by.
var saslFault = faults.SASL
