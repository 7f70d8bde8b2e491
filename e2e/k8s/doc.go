// Package k8s checks the repository's Kubernetes shape (the k8s folder at
// the module root) against the Kubernetes API types: every manifest decodes
// strictly into its type, the manifests agree with each other and with the
// registry's rules, and the Dockerfile ships what the StatefulSet runs.
//
// It lives in the test module because k8s.io/api and sigs.k8s.io/* are test
// dependencies only; the product module's k8s package keeps the manifests
// and the entrypoint's own test (standard library only). It holds tests
// only and reads the files; it must not reach for anything but them and the
// registry's exported rules.
package k8s
