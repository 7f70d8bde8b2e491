// Package k8s holds the Kubernetes shape of a cluster-mode deployment: the
// StatefulSet, its headless Service (one DNS name per facade, the advertised
// addresses), the ordinary bootstrap Service, a PodDisruptionBudget and the
// entrypoint that turns a pod name into a node id and an advertised address.
// The Go code here is only the entrypoint's test; the tests that decode
// every manifest strictly into the Kubernetes API types are e2e/k8s, in the
// test module (k8s.io/api is a test-only dependency); README.md is the
// operator's page.
package k8s
