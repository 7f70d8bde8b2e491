package node

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
	"github.com/queen-mq/queen-kafka/queen/dev"
	"github.com/queen-mq/queen-kafka/transport"
)

// saslTokens are the dev broker's credentials: two tenants, and tenant a's
// read-only and write-only keys.
var saslTokens = map[string]dev.Token{
	"tok-a":  {Tenant: "a", Role: dev.RoleAll},
	"tok-a2": {Tenant: "a", Role: dev.RoleAll},
	"tok-b":  {Tenant: "b", Role: dev.RoleAll},
	"tok-ro": {Tenant: "a", Role: dev.RoleReadOnly},
	"tok-wo": {Tenant: "a", Role: dev.RoleWriteOnly},
}

// saslEnv serves a SASL/PLAIN node, with no QUEEN_TOKEN of its own, over
// a dev broker with auth on; tenant a has topic orders-a, tenant b orders-b.
func saslEnv(t *testing.T) (*Node, *devQueen, string) {
	t.Helper()
	dq, url := newDevQueenTokens(t, saslTokens)
	for tok, topic := range map[string]string{"tok-a": "orders-a", "tok-b": "orders-b"} {
		if _, err := dq.q.As(tok, "").Configure(context.Background(), topic, nil); err != nil {
			t.Fatalf("configure %s: %v", topic, err)
		}
	}
	n := newNodeOn(t, url, map[string]string{"QUEEN_KAFKA_SASL": "plain"})
	return n, dq, serveTestNode(t, n)
}

func plainToken(user, password string) []byte {
	return []byte("\x00" + user + "\x00" + password)
}

func saslHandshake(t *testing.T, k *kclient, version int16, mechanism string) *kmsg.SASLHandshakeResponse {
	t.Helper()
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Version, req.Mechanism = version, mechanism
	return k.roundTrip(req).(*kmsg.SASLHandshakeResponse)
}

func saslAuthenticate(t *testing.T, k *kclient, token []byte) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.Version, req.SASLAuthBytes = 1, token
	return k.roundTrip(req).(*kmsg.SASLAuthenticateResponse)
}

// saslLogin dials addr and authenticates with the v1 flow.
func saslLogin(t *testing.T, addr, user, password string) *kclient {
	t.Helper()
	k := dial(t, addr)
	if hs := saslHandshake(t, k, 1, "PLAIN"); hs.ErrorCode != 0 || !slices.Equal(hs.SupportedMechanisms, []string{"PLAIN"}) {
		t.Fatalf("handshake: code %d, mechanisms %v", hs.ErrorCode, hs.SupportedMechanisms)
	}
	if resp := saslAuthenticate(t, k, plainToken(user, password)); resp.ErrorCode != 0 || resp.SessionLifetimeMillis != 0 {
		t.Fatalf("authenticate: code %d (%v), session_lifetime_ms %d", resp.ErrorCode, resp.ErrorMessage, resp.SessionLifetimeMillis)
	}
	return k
}

// saslClosedUnanswered dials addr and authenticates with password
// through the v1 flow, expecting the connection closed with no answer:
// Queen could not say whether or for whom the token is good.
func saslClosedUnanswered(t *testing.T, addr, password string) {
	t.Helper()
	k := dial(t, addr)
	saslHandshake(t, k, 1, "PLAIN")
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.Version, req.SASLAuthBytes = 1, plainToken("u", password)
	k.send(req)
	k.expectClosed()
}

// topicNames lists the topics a Metadata request for all topics answers.
func topicNames(t *testing.T, k *kclient) []string {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 9
	resp := k.roundTrip(req).(*kmsg.MetadataResponse)
	var names []string
	for _, tp := range resp.Topics {
		if tp.ErrorCode != 0 {
			t.Fatalf("metadata topic %v: code %d", tp.Topic, tp.ErrorCode)
		}
		names = append(names, *tp.Topic)
	}
	slices.Sort(names)
	return names
}

// headerLog records the Authorization of every call the dev broker gets.
type headerLog struct {
	mu    sync.Mutex
	calls []string // "<path> <authorization>"
}

func (h *headerLog) record(r *http.Request) (int, string, string) {
	h.mu.Lock()
	h.calls = append(h.calls, r.URL.Path+" "+r.Header.Get("Authorization"))
	h.mu.Unlock()
	return 0, "", ""
}

func (h *headerLog) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.calls
	h.calls = nil
	return out
}

// The v1 flow authenticates with the Queen token as password; afterwards
// every Queen call of the connection carries that token, so two tenants'
// connections see their own topics only, filed under the tenant /auth/me
// names.
func TestSaslV1FlowCarriesTheConnectionsToken(t *testing.T) {
	n, dq, addr := saslEnv(t)
	var hl headerLog
	dq.setFault(hl.record)

	a := saslLogin(t, addr, "orders-service", "tok-a")
	if got := topicNames(t, a); !slices.Equal(got, []string{"orders-a"}) {
		t.Fatalf("tenant a sees %v", got)
	}
	for _, call := range hl.take() {
		if !strings.HasSuffix(call, " Bearer tok-a") {
			t.Fatalf("a call of tenant a's connection carried another credential: %q", call)
		}
	}
	b := saslLogin(t, addr, "billing", "tok-b")
	if got := topicNames(t, b); !slices.Equal(got, []string{"orders-b"}) {
		t.Fatalf("tenant b sees %v", got)
	}
	for _, call := range hl.take() {
		if !strings.HasSuffix(call, " Bearer tok-b") {
			t.Fatalf("a call of tenant b's connection carried another credential: %q", call)
		}
	}
	ids := n.cats.Filed()
	filedA := slices.Contains(ids, "tenant:a")
	filedB := slices.Contains(ids, "tenant:b")
	shared := slices.Contains(ids, "")
	if !filedA || !filedB || shared {
		t.Fatal("topic lists must be filed under the tenants /auth/me names, never the node's credential")
	}
}

// A second key of the same tenant shares the tenant's identity, and
// /auth/me is asked once per credential, not once per connection.
func TestSaslIdentityAskedOncePerCredential(t *testing.T) {
	n, dq, addr := saslEnv(t)
	saslLogin(t, addr, "u", "tok-a")
	saslLogin(t, addr, "u", "tok-a")
	if got := dq.count("GET /auth/me"); got != 1 {
		t.Fatalf("/auth/me asked %d times for one credential", got)
	}
	saslLogin(t, addr, "u", "tok-a2")
	if got := dq.count("GET /auth/me"); got != 2 {
		t.Fatalf("/auth/me asked %d times for two credentials", got)
	}
	for _, id := range n.srv.Identities() {
		if id != "tenant:a" {
			t.Fatalf("identity answer %q, want tenant a kept", id)
		}
	}
}

// A failure to ask /auth/me (here a 502) is no answer: the connection is
// closed with none, as for any Queen failure while authenticating, and the
// next connection asks again; filing it under its credential would split
// its consumer groups from its tenant's. A definite answer naming no
// tenant (a 404 from a gateway without the route) is kept: that
// credential stands for itself, as its hash.
func TestSaslIdentityFailureClosesTheConnection(t *testing.T) {
	n, dq, addr := saslEnv(t)
	var mu sync.Mutex
	answer := map[string]int{"tok-a": http.StatusBadGateway, "tok-b": http.StatusNotFound}
	dq.setFault(func(r *http.Request) (int, string, string) {
		mu.Lock()
		defer mu.Unlock()
		if r.URL.Path != "/auth/me" {
			return 0, "", ""
		}
		if code := answer[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]; code != 0 {
			return code, "", `{"error":"injected"}`
		}
		return 0, "", ""
	})
	// filed is the identity a fresh login's topic list is filed under.
	filed := func(token string) string {
		k := saslLogin(t, addr, "u", token)
		topicNames(t, k)
		ids := n.cats.Filed()
		n.cats.Forget()
		if len(ids) != 1 {
			t.Fatalf("topic lists filed under %v", ids)
		}
		return ids[0]
	}
	saslClosedUnanswered(t, addr, "tok-a")
	saslClosedUnanswered(t, addr, "tok-a")
	if got := dq.count("GET /auth/me"); got != 2 {
		t.Fatalf("/auth/me asked %d times for two connections while it failed, want each to ask", got)
	}
	mu.Lock()
	delete(answer, "tok-a")
	mu.Unlock()
	if got := filed("tok-a"); got != "tenant:a" {
		t.Fatalf("once /auth/me answers: identity %q, want tenant:a", got)
	}
	if got := filed("tok-a"); got != "tenant:a" || dq.count("GET /auth/me") != 3 {
		t.Fatalf("the answer was not kept: identity %q, %d asks", got, dq.count("GET /auth/me"))
	}

	id := filed("tok-b")
	if !strings.HasPrefix(id, "cred:") || strings.Contains(id, "tok-b") {
		t.Fatalf("a credential /auth/me names no tenant for is %q, want its hash", id)
	}
	if again := filed("tok-b"); again != id || dq.count("GET /auth/me") != 4 {
		t.Fatalf("a definite answer was asked again: identity %q, %d asks", again, dq.count("GET /auth/me"))
	}
}

// A token Queen refuses is SASL_AUTHENTICATION_FAILED, then the connection
// closes; a valid token without the read scope says it is not a bad
// password.
func TestSaslRefusedTokens(t *testing.T) {
	_, _, addr := saslEnv(t)
	for _, tc := range []struct {
		token string
		want  []string
	}{
		{"wrong", []string{"401", "Invalid token signature"}},
		{"tok-wo", []string{"403", "read scope", "not a bad password", "Insufficient permissions"}},
	} {
		k := dial(t, addr)
		saslHandshake(t, k, 1, "PLAIN")
		resp := saslAuthenticate(t, k, plainToken("u", tc.token))
		if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil {
			t.Fatalf("%s: code %d", tc.token, resp.ErrorCode)
		}
		for _, w := range tc.want {
			if !strings.Contains(*resp.ErrorMessage, w) {
				t.Fatalf("%s: error_message %q lacks %q", tc.token, *resp.ErrorMessage, w)
			}
		}
		if strings.Contains(*resp.ErrorMessage, tc.token) {
			t.Fatalf("error_message repeats the password: %q", *resp.ErrorMessage)
		}
		k.expectClosed()
	}
}

// A read-only token authenticates (listing queues is a read), and Queen
// refuses its writes with the authorization code.
func TestSaslReadOnlyToken(t *testing.T) {
	_, _, addr := saslEnv(t)
	k := saslLogin(t, addr, "reader", "tok-ro")
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.TimeoutMillis = 4, 5000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "new-topic", 1, 1
	req.Topics = append(req.Topics, rt)
	resp := k.roundTrip(req).(*kmsg.CreateTopicsResponse)
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("read-only CreateTopics: %+v", resp.Topics)
	}
}

// Queen unreachable, throttling or failing is not the client's fault: the
// connection closes with no answer, which every client retries.
func TestSaslQueenFailureClosesWithoutCode(t *testing.T) {
	_, dq, addr := saslEnv(t)
	for _, status := range []int{http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusServiceUnavailable} {
		dq.setFault(func(r *http.Request) (int, string, string) {
			if r.URL.Path == "/api/v1/resources/queues" {
				return status, "1", `{"error":"pool"}`
			}
			return 0, "", ""
		})
		saslClosedUnanswered(t, addr, "tok-a")
	}
	dq.setFault(nil)
	saslLogin(t, addr, "u", "tok-a") // and the same token works once Queen does

	unreachable := newNodeOn(t, "http://127.0.0.1:1", map[string]string{"QUEEN_KAFKA_SASL": "plain"})
	k := dial(t, serveTestNode(t, unreachable))
	saslHandshake(t, k, 1, "PLAIN")
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.Version, req.SASLAuthBytes = 1, plainToken("u", "tok-a")
	k.send(req)
	k.expectClosed()
}

// After a v0 handshake the token is the bare next frame, answered by a bare
// empty frame; then the connection speaks Kafka as usual.
func TestSaslV0RawToken(t *testing.T) {
	_, _, addr := saslEnv(t)
	rawFrame := func(b []byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
	}
	k := dial(t, addr)
	if hs := saslHandshake(t, k, 0, "PLAIN"); hs.ErrorCode != 0 || !slices.Equal(hs.SupportedMechanisms, []string{"PLAIN"}) {
		t.Fatalf("v0 handshake: %+v", hs)
	}
	if _, err := k.nc.Write(rawFrame(plainToken("u", "tok-b"))); err != nil {
		t.Fatal(err)
	}
	_ = k.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	answer, err := transport.ReadFrame(k.br, transport.MaxFrame)
	if err != nil || len(answer) != 0 {
		t.Fatalf("raw token answer %x, %v; want an empty frame", answer, err)
	}
	if got := topicNames(t, k); !slices.Equal(got, []string{"orders-b"}) {
		t.Fatalf("after the v0 flow the connection sees %v", got)
	}

	bad := dial(t, addr)
	saslHandshake(t, bad, 0, "PLAIN")
	if _, err := bad.nc.Write(rawFrame(plainToken("u", "wrong"))); err != nil {
		t.Fatal(err)
	}
	bad.expectClosed()
}

// The mechanism is matched exactly; anything else is refused with the list
// and the connection closes.
func TestSaslUnknownMechanism(t *testing.T) {
	_, _, addr := saslEnv(t)
	for _, mech := range []string{"SCRAM-SHA-256", "plain"} {
		k := dial(t, addr)
		hs := saslHandshake(t, k, 1, mech)
		if hs.ErrorCode != kerr.UnsupportedSaslMechanism.Code || !slices.Equal(hs.SupportedMechanisms, []string{"PLAIN"}) {
			t.Fatalf("%s: %+v", mech, hs)
		}
		k.expectClosed()
	}
}

// SaslAuthenticate without a handshake is ILLEGAL_SASL_STATE, a malformed
// PLAIN message SASL_AUTHENTICATION_FAILED, and both close; so does any
// other API between the handshake and the authentication.
func TestSaslOutOfOrderAndMalformed(t *testing.T) {
	_, dq, addr := saslEnv(t)
	k := dial(t, addr)
	if resp := saslAuthenticate(t, k, plainToken("u", "tok-a")); resp.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("without handshake: code %d", resp.ErrorCode)
	}
	k.expectClosed()

	for _, msg := range [][]byte{[]byte("tok-a"), plainToken("", "tok-a"), plainToken("u", ""), []byte("\x00u\x00tok-a\x00x")} {
		k := dial(t, addr)
		saslHandshake(t, k, 1, "PLAIN")
		if resp := saslAuthenticate(t, k, msg); resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("malformed %q: code %d", msg, resp.ErrorCode)
		}
		k.expectClosed()
	}
	if got := dq.count("GET /api/v1/resources/queues"); got != 0 {
		t.Fatalf("a malformed or out-of-order token reached Queen %d times", got)
	}

	mid := dial(t, addr)
	saslHandshake(t, mid, 1, "PLAIN")
	mid.send(kmsg.NewPtrMetadataRequest())
	mid.expectClosed()
}

// Once authenticated, the SASL APIs are answered ILLEGAL_SASL_STATE and the
// connection lives on, as Kafka answers them outside its authenticator.
func TestSaslAfterAuthentication(t *testing.T) {
	_, _, addr := saslEnv(t)
	k := saslLogin(t, addr, "u", "tok-a")
	if hs := saslHandshake(t, k, 1, "PLAIN"); hs.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("handshake after authentication: code %d", hs.ErrorCode)
	}
	if resp := saslAuthenticate(t, k, plainToken("u", "tok-b")); resp.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("authenticate after authentication: code %d", resp.ErrorCode)
	}
	if got := topicNames(t, k); !slices.Equal(got, []string{"orders-a"}) {
		t.Fatalf("a second authenticate changed the credential: sees %v", got)
	}
}

// With QUEEN_KAFKA_FORWARD_SNI_HOST the token is verified, and the
// connection's calls made, with the dialled server name as Host.
func TestSaslForwardsSNIHost(t *testing.T) {
	certPath, keyPath := testsupport.WriteCert(t, t.TempDir(), "tenant-a.kafka.test")
	dq, url := newDevQueenTokens(t, saslTokens)
	n := newNodeOn(t, url, map[string]string{"QUEEN_KAFKA_SASL": "plain", "QUEEN_KAFKA_TLS_CERT": certPath, "QUEEN_KAFKA_TLS_KEY": keyPath, "QUEEN_KAFKA_FORWARD_SNI_HOST": "true"})
	var mu sync.Mutex
	var seen []string
	dq.setFault(func(r *http.Request) (int, string, string) {
		mu.Lock()
		seen = append(seen, r.URL.Path+" "+r.Host+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		return 0, "", ""
	})
	tc, err := tls.Dial("tcp", serveTestNode(t, n), &tls.Config{InsecureSkipVerify: true, ServerName: "tenant-a.kafka.test"})
	if err != nil {
		t.Fatalf("tls dial: %v", err)
	}
	t.Cleanup(func() { tc.Close() })
	k := &kclient{t: t, nc: tc, br: bufio.NewReader(tc), fmtr: kmsg.NewRequestFormatter()}
	saslHandshake(t, k, 1, "PLAIN")
	if resp := saslAuthenticate(t, k, plainToken("u", "tok-a")); resp.ErrorCode != 0 {
		t.Fatalf("authenticate over TLS: code %d", resp.ErrorCode)
	}
	mu.Lock()
	defer mu.Unlock()
	want := "/api/v1/resources/queues tenant-a.kafka.test Bearer tok-a"
	if len(seen) == 0 || seen[0] != want {
		t.Fatalf("verification call %v, want %q first", seen, want)
	}
}

// Before authentication a frame is read only once the one before it is
// answered, so a client that pipelines its authentication is read right:
// the bare token after a v0 handshake, and a request after the
// authentication that admits it.
func TestSaslPipelinedAuthentication(t *testing.T) {
	_, _, addr := saslEnv(t)
	fmtr := kmsg.NewRequestFormatter(kmsg.FormatterClientID("test"))

	k := dial(t, addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 0, "PLAIN"
	wire := fmtr.AppendRequest(nil, hs, 1)
	token := plainToken("u", "tok-a")
	wire = append(binary.BigEndian.AppendUint32(wire, uint32(len(token))), token...)
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 9
	wire = append(wire, fmtr.AppendRequest(nil, md, 2)...) // AppendRequest sizes its frame from dst[0]
	if _, err := k.nc.Write(wire); err != nil {
		t.Fatal(err)
	}
	if _, resp := k.recv(hs); resp.(*kmsg.SASLHandshakeResponse).ErrorCode != 0 {
		t.Fatalf("pipelined v0 handshake: code %d", resp.(*kmsg.SASLHandshakeResponse).ErrorCode)
	}
	if answer, err := transport.ReadFrame(k.br, transport.MaxFrame); err != nil || len(answer) != 0 {
		t.Fatalf("pipelined raw token answer %x, %v", answer, err)
	}
	if corr, resp := k.recv(md); corr != 2 || len(resp.(*kmsg.MetadataResponse).Topics) != 1 {
		t.Fatalf("Metadata pipelined behind the v0 flow: correlation %d, %+v", corr, resp)
	}

	k1 := dial(t, addr)
	hs.Version = 1
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.Version, auth.SASLAuthBytes = 1, token
	wire = fmtr.AppendRequest(nil, hs, 1)
	wire = append(wire, fmtr.AppendRequest(nil, auth, 2)...)
	wire = append(wire, fmtr.AppendRequest(nil, md, 3)...)
	if _, err := k1.nc.Write(wire); err != nil {
		t.Fatal(err)
	}
	k1.recv(hs)
	if _, resp := k1.recv(auth); resp.(*kmsg.SASLAuthenticateResponse).ErrorCode != 0 {
		t.Fatalf("pipelined SaslAuthenticate: code %d", resp.(*kmsg.SASLAuthenticateResponse).ErrorCode)
	}
	if corr, resp := k1.recv(md); corr != 3 || len(resp.(*kmsg.MetadataResponse).Topics) != 1 {
		t.Fatalf("Metadata pipelined behind the v1 flow: correlation %d, %+v", corr, resp)
	}
}

// Connections of one credential authenticating while its /auth/me is being
// asked wait for that one answer instead of asking again each.
func TestSaslIdentityAskedOnceForConcurrentConnections(t *testing.T) {
	_, dq, addr := saslEnv(t)
	release := make(chan struct{})
	dq.setFault(func(r *http.Request) (int, string, string) {
		if r.URL.Path == "/auth/me" {
			<-release
		}
		return 0, "", ""
	})
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.Version, auth.SASLAuthBytes = 1, plainToken("u", "tok-a")
	var ks []*kclient
	for range 3 {
		k := dial(t, addr)
		k.send(hs)
		k.send(auth) // pipelined: read once the handshake is answered
		ks = append(ks, k)
	}
	// Hold the first question until every connection has verified its
	// token, and a little beyond, so that each has reached the question.
	for i := 0; dq.count("GET /api/v1/resources/queues") < len(ks); i++ {
		if i == 500 {
			t.Fatalf("only %d of %d connections verified their token", dq.count("GET /api/v1/resources/queues"), len(ks))
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	asked := dq.count("GET /auth/me")
	close(release)
	for _, k := range ks {
		k.recv(hs)
		if _, resp := k.recv(auth); resp.(*kmsg.SASLAuthenticateResponse).ErrorCode != 0 {
			t.Fatalf("authenticate: code %d", resp.(*kmsg.SASLAuthenticateResponse).ErrorCode)
		}
	}
	if asked != 1 || dq.count("GET /auth/me") != 1 {
		t.Fatalf("/auth/me asked %d times (%d while held) for %d concurrent connections of one credential", dq.count("GET /auth/me"), asked, len(ks))
	}
}
