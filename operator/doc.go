// Package operator is the facade's operator HTTP listener
// (QUEEN_KAFKA_HTTP_ADDR): /metrics, /healthz, /readyz and /debug/pprof/
// on one port, for Prometheus, Kubernetes probes and a profile taken from a
// running node.
//
// It owns the routes, their answers' shape and the listener's lifecycle.
// It does not own what is measured (package metrics hands it a handler) or
// what readiness means (the node hands it its checks): it only serves them.
// pprof is served from this mux alone, never from http.DefaultServeMux, and
// like the rest of the listener it is meant for operators: bind it to an
// address clients of the Kafka port do not reach.
package operator
