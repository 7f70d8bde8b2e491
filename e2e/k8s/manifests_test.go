package k8s

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/queen-mq/queen-kafka/registry"
)

// strict decodes YAML the way the API server's strict field validation
// does: duplicate keys, unknown fields and wrong types fail, and field names
// match case-sensitively. yaml.UnmarshalStrict alone is not enough, because
// encoding/json matches field names case-insensitively and would accept
// "clusterIp" for "clusterIP".
func strict(raw []byte, into any) error {
	js, err := yaml.YAMLToJSONStrict(raw)
	if err != nil {
		return err
	}
	strictErrs, err := kjson.UnmarshalStrict(js, into, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	return errors.Join(strictErrs...)
}

// selectsPods fails unless selector is non-empty and every label it names
// is on the pod template: an empty selector would pass the label check yet
// select nothing (or, on a PDB, every pod of the namespace).
func selectsPods(t *testing.T, what string, selector, labels map[string]string) {
	t.Helper()
	if len(selector) == 0 {
		t.Errorf("%s has an empty selector", what)
	}
	for k, v := range selector {
		if labels[k] != v {
			t.Errorf("%s selects %s=%s, which the pods do not carry", what, k, v)
		}
	}
}

// decode reads one manifest and decodes it strictly.
func decode(t *testing.T, file string, into any) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := strict(raw, into); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

func TestEveryManifestDecodesStrictly(t *testing.T) {
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"bootstrap-service.yaml", "headless-service.yaml", "pod-disruption-budget.yaml", "statefulset.yaml"}
	if !slices.Equal(files, want) {
		t.Fatalf("manifests %v, want %v (add a decode case for a new one)", files, want)
	}
	for _, f := range files {
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(raw, &head); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var obj any
		switch head.APIVersion + "/" + head.Kind {
		case "apps/v1/StatefulSet":
			obj = &appsv1.StatefulSet{}
		case "v1/Service":
			obj = &corev1.Service{}
		case "policy/v1/PodDisruptionBudget":
			obj = &policyv1.PodDisruptionBudget{}
		default:
			t.Fatalf("%s: unexpected %s %s", f, head.APIVersion, head.Kind)
		}
		decode(t, f, obj)
	}
}

func TestStrictDecodeRefusesWhatTheAPIServerRefuses(t *testing.T) {
	for name, doc := range map[string]string{
		"wrong case":    "apiVersion: v1\nkind: Service\nspec:\n  clusterIp: None\n",
		"unknown field": "apiVersion: v1\nkind: Service\nspec:\n  headless: true\n",
		"duplicate key": "apiVersion: v1\nkind: Service\nkind: Service\n",
		"wrong type":    "apiVersion: v1\nkind: Service\nspec:\n  ports: 9092\n",
	} {
		var svc corev1.Service
		if err := strict([]byte(doc), &svc); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
	var svc corev1.Service
	if err := strict([]byte("apiVersion: v1\nkind: Service\nspec:\n  clusterIP: None\n"), &svc); err != nil {
		t.Fatalf("a correct Service refused: %v", err)
	}
}

func TestHeadlessAndBootstrapServices(t *testing.T) {
	var sts appsv1.StatefulSet
	decode(t, "statefulset.yaml", &sts)
	var headless, bootstrap corev1.Service
	decode(t, "headless-service.yaml", &headless)
	decode(t, "bootstrap-service.yaml", &bootstrap)

	if headless.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("headless Service clusterIP = %q, want None", headless.Spec.ClusterIP)
	}
	if !headless.Spec.PublishNotReadyAddresses {
		t.Error("headless Service must publish not-ready addresses: a registered node's name has to resolve")
	}
	if sts.Spec.ServiceName != headless.Name {
		t.Errorf("StatefulSet serviceName %q is not the headless Service %q", sts.Spec.ServiceName, headless.Name)
	}
	if bootstrap.Name == headless.Name || bootstrap.Name != "queen-kafka-bootstrap" {
		t.Errorf("bootstrap Service is %q", bootstrap.Name)
	}
	if bootstrap.Spec.ClusterIP == corev1.ClusterIPNone {
		t.Error("bootstrap Service is headless; it is meant to be an ordinary Service")
	}
	for _, svc := range []corev1.Service{headless, bootstrap} {
		selectsPods(t, "Service "+svc.Name, svc.Spec.Selector, sts.Spec.Template.Labels)
		if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 9092 || svc.Spec.Ports[0].TargetPort.StrVal != "kafka" {
			t.Errorf("Service %s ports %+v, want 9092 -> kafka", svc.Name, svc.Spec.Ports)
		}
	}
}

func TestStatefulSetShape(t *testing.T) {
	var sts appsv1.StatefulSet
	decode(t, "statefulset.yaml", &sts)
	if sts.Name != "queen-kafka" {
		t.Errorf("name %q", sts.Name)
	}
	if sts.Spec.Replicas == nil || *sts.Spec.Replicas != 3 {
		t.Errorf("replicas %v, want 3", sts.Spec.Replicas)
	}
	selectsPods(t, "StatefulSet selector", sts.Spec.Selector.MatchLabels, sts.Spec.Template.Labels)
	pod := sts.Spec.Template.Spec
	// The registry row's fenced delete plus the time to drain connections
	// must fit inside the grace period.
	if g := pod.TerminationGracePeriodSeconds; g == nil || time.Duration(*g)*time.Second <= registry.CloseBudget+5*time.Second {
		t.Errorf("terminationGracePeriodSeconds %v must leave room for draining plus the %v registry delete", g, registry.CloseBudget)
	}
	if psc := pod.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Errorf("pod securityContext %+v is not non-root", psc)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Containers))
	}
	c := pod.Containers[0]
	if !slices.Equal(c.Command, []string{"/bin/sh", "/app/bin/entrypoint.sh"}) {
		t.Errorf("command %v does not run the entrypoint", c.Command)
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if len(c.Ports) != 2 || ports["kafka"] != 9092 || ports["http"] == 0 {
		t.Errorf("ports %+v, want kafka 9092 and the operator's http", c.Ports)
	}
	// Readiness is the facade's own /readyz, which fails while a restarted
	// pod waits out its predecessor's registry row; liveness is /healthz,
	// which does not depend on Queen. Both on the operator port.
	for _, probe := range []struct {
		what string
		p    *corev1.Probe
		path string
	}{{"readiness", c.ReadinessProbe, "/readyz"}, {"liveness", c.LivenessProbe, "/healthz"}} {
		if probe.p == nil || probe.p.HTTPGet == nil || probe.p.HTTPGet.Path != probe.path || probe.p.HTTPGet.Port.StrVal != "http" {
			t.Errorf("%s probe %+v is not GET %s on the http port", probe.what, probe.p, probe.path)
		}
	}
	if a := sts.Spec.Template.Annotations; a["prometheus.io/port"] != strconv.Itoa(int(ports["http"])) || a["prometheus.io/path"] != "/metrics" {
		t.Errorf("scrape annotations %v do not name the http port's /metrics", a)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources %+v lack cpu/memory requests or a memory limit", c.Resources)
	}
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, corev1.Capability("ALL")) {
		t.Errorf("container securityContext %+v", sc)
	}

	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		if _, dup := env[e.Name]; dup {
			t.Errorf("env %s set twice", e.Name)
		}
		env[e.Name] = e
	}
	field := func(name, path string) {
		if e, ok := env[name]; !ok || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != path {
			t.Errorf("env %s is not the downward API field %s", name, path)
		}
	}
	field("POD_NAME", "metadata.name")
	field("POD_NAMESPACE", "metadata.namespace")
	if e := env["QUEEN_TOKEN"]; e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.Value != "" {
		t.Error("QUEEN_TOKEN must come from a Secret, never a literal")
	}
	if env["QUEEN_URL"].Value == "" {
		t.Error("QUEEN_URL unset")
	}
	if _, port, err := net.SplitHostPort(env["QUEEN_KAFKA_HTTP_ADDR"].Value); err != nil || port != strconv.Itoa(int(ports["http"])) {
		t.Errorf("QUEEN_KAFKA_HTTP_ADDR %q does not bind the http port %d", env["QUEEN_KAFKA_HTTP_ADDR"].Value, ports["http"])
	}
	if env["QK_HEADLESS_SERVICE"].Value != sts.Spec.ServiceName {
		t.Errorf("QK_HEADLESS_SERVICE %q is not serviceName %q", env["QK_HEADLESS_SERVICE"].Value, sts.Spec.ServiceName)
	}
	// The entrypoint owns these two; a literal in the manifest would be one
	// address (or id) for every pod.
	for _, name := range []string{"QUEEN_KAFKA_NODE_ID", "QUEEN_KAFKA_ADVERTISED_ADDR"} {
		if _, ok := env[name]; ok {
			t.Errorf("%s is set in the manifest; the entrypoint derives it per pod", name)
		}
	}
}

func TestDisruptionBudget(t *testing.T) {
	var pdb policyv1.PodDisruptionBudget
	var sts appsv1.StatefulSet
	decode(t, "pod-disruption-budget.yaml", &pdb)
	decode(t, "statefulset.yaml", &sts)
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("maxUnavailable %v, want 1", pdb.Spec.MaxUnavailable)
	}
	selectsPods(t, "PDB", pdb.Spec.Selector.MatchLabels, sts.Spec.Template.Labels)
}
