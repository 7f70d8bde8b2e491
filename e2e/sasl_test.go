package e2e

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// saslFacade is a SASL/PLAIN facade with no QUEEN_TOKEN of its own in front
// of a queen-dev with auth on: tenant a's full and write-only keys, and
// tenant b's key.
func saslFacade(t *testing.T) *facade {
	t.Helper()
	dev := startQueenDev(t, devOptions{tokens: "tok-a=a,tok-b=b,tok-wo=a:wo"})
	return startFacade(t, dev, map[string]string{"QUEEN_KAFKA_SASL": "plain", "QUEEN_KAFKA_DEFAULT_PARTITIONS": "2"})
}

func kgoPlain(user, password string) kgo.Opt {
	return kgo.SASL(plain.Auth{User: user, Pass: password}.AsMechanism())
}

// franz-go authenticates with the Queen token as its PLAIN password,
// produces and consumes as that tenant; another tenant's credential does
// not see the topic, a wrong password is SASL_AUTHENTICATION_FAILED, and a
// token without the read scope is told it is not a bad password.
func TestSaslFranzGo(t *testing.T) {
	t.Parallel()
	fac := saslFacade(t)
	seeds := []string{fac.addr}
	if !strings.Contains(fac.Out.From(0), "QUEEN_KAFKA_SASL=plain on a plaintext listener") {
		t.Errorf("no boot warning for SASL without TLS:\n%s", fac.Out.From(0))
	}
	topic := uniq("sasl-kgo")
	ctx := ctxT(t, 60*time.Second)

	prod := newKgo(t, seeds, kgoPlain("orders-service", "tok-a"), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())
	want := []string{"one", "two", "three"}
	for _, v := range want {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce as tenant a: %v", err)
		}
	}
	cons := newKgo(t, seeds, kgoPlain("billing", "tok-a"), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for _, r := range pollKgo(t, cons, len(want), 20*time.Second) {
		got = append(got, string(r.value))
	}
	slices.Sort(got)
	if exp := slices.Sorted(slices.Values(want)); !slices.Equal(got, exp) {
		t.Fatalf("consumed %v, want %v", got, exp)
	}

	topicsOf := func(password string) kadm.TopicDetails {
		t.Helper()
		td, err := kadm.NewClient(newKgo(t, seeds, kgoPlain("admin", password))).ListTopics(ctx)
		if err != nil {
			t.Fatalf("list topics with %s: %v", password, err)
		}
		return td
	}
	if !topicsOf("tok-a").Has(topic) {
		t.Fatalf("tenant a does not list its own topic %s", topic)
	}
	if topicsOf("tok-b").Has(topic) {
		t.Fatalf("tenant b lists tenant a's topic %s", topic)
	}

	logs := fac.Out.From(0)
	if !strings.Contains(logs, "orders-service") || strings.Contains(logs, "tok-a") {
		t.Errorf("the facade's log must name the SASL username and never the token:\n%s", logs)
	}

	for _, tc := range []struct{ password, mention string }{
		{"wrong", "Invalid token signature"},
		{"tok-wo", "not a bad password"},
	} {
		bad := newKgo(t, seeds, kgoPlain("u", tc.password))
		err := bad.Ping(ctx)
		if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), tc.mention) {
			t.Fatalf("password %s: Ping = %v, want SASL_AUTHENTICATION_FAILED mentioning %q", tc.password, err, tc.mention)
		}
	}
}

// kcat (librdkafka) with security.protocol=SASL_PLAINTEXT and the token as
// sasl.password produces and consumes; a wrong password fails.
func TestSaslKcat(t *testing.T) {
	t.Parallel()
	fac := saslFacade(t)
	topic := uniq("sasl-kcat")
	sasl := func(password string, args ...string) []string {
		return append([]string{"-b", fac.addr, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=PLAIN",
			"-X", "sasl.username=u", "-X", "sasl.password=" + password}, args...)
	}
	runKcat(t, "k1:v1\nk2:v2\nk3:v3\n", sasl("tok-a", "-P", "-t", topic, "-K:")...)
	out := runKcat(t, "", sasl("tok-a", "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%k=%s\n")...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	slices.Sort(lines)
	if want := []string{"k1=v1", "k2=v2", "k3=v3"}; !slices.Equal(lines, want) {
		t.Fatalf("kcat consumed %q, want %q", lines, want)
	}

	md, stderr, err := execKcat(t, "", sasl("wrong", "-L", "-m", "5")...)
	if err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("kcat -L with a wrong password: err %v\nstdout:\n%s\nstderr:\n%s", err, md, stderr)
	}
	if !strings.Contains(stderr, "Invalid token signature") {
		t.Fatalf("kcat's error does not carry the refusal:\n%s", stderr)
	}
}
