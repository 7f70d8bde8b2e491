// Package codegrid is one Kafka error code per partition of a request,
// topic by topic in request order: what every per-partition answer of the
// group and transaction APIs is built from. It owns nothing else.
package codegrid
