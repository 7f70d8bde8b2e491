package supervisor

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queen-mq/queen-kafka/config"
)

// fakeBin is an executable file named queen-kafka in a directory of its
// own, and the path of a broker executable beside it.
func fakeBin(t *testing.T) (bin, exe string) {
	t.Helper()
	dir := t.TempDir()
	bin = filepath.Join(dir, binName)
	require.NoError(t, os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755))
	return bin, filepath.Join(dir, "queen-dev")
}

func load(t *testing.T, exe string, env ...string) (*Config, error) {
	t.Helper()
	return Load(context.Background(), env, func() (string, error) { return exe, nil })
}

func TestLoadOffReadsNothingElse(t *testing.T) {
	for _, env := range [][]string{
		nil,
		{"QUEEN_KAFKA_EMBEDDED=false"},
		{"QUEEN_KAFKA_EMBEDDED=  "}, // blank is unset
		// Off, the supervisor's own variables are not read, so nonsense
		// in them changes nothing.
		{"QUEEN_KAFKA_EMBEDDED=false", "QUEEN_KAFKA_BIN=/nonexistent", "QUEEN_KAFKA_SHUTDOWN_GRACE_MS=soon"},
	} {
		c, err := load(t, "/nowhere/queen-dev", env...)
		assert.NoError(t, err, "%v", env)
		assert.Nil(t, c, "%v", env)
	}
}

func TestLoadOn(t *testing.T) {
	bin, exe := fakeBin(t)
	c, err := load(t, exe, "QUEEN_KAFKA_EMBEDDED=true", "QUEEN_KAFKA_ADVERTISED_ADDR=localhost:9092")
	require.NoError(t, err)
	assert.Equal(t, bin, c.Bin, "the default is the queen-kafka file beside the executable")
	assert.Equal(t, 5*time.Second, c.Grace, "QUEEN_KAFKA_SHUTDOWN_GRACE_MS's default")

	other, _ := fakeBin(t)
	c, err = load(t, "/nowhere/queen-dev", "QUEEN_KAFKA_EMBEDDED=true", "QUEEN_KAFKA_ADVERTISED_ADDR=localhost:9092",
		"QUEEN_KAFKA_BIN="+other, "QUEEN_KAFKA_SHUTDOWN_GRACE_MS=2500")
	require.NoError(t, err)
	assert.Equal(t, other, c.Bin)
	assert.Equal(t, 2500*time.Millisecond, c.Grace)

	// A relative QUEEN_KAFKA_BIN is made absolute at boot.
	t.Chdir(filepath.Dir(other))
	c, err = load(t, "/nowhere/queen-dev", "QUEEN_KAFKA_EMBEDDED=true", "QUEEN_KAFKA_ADVERTISED_ADDR=localhost:9092", "QUEEN_KAFKA_BIN=./"+binName)
	require.NoError(t, err)
	assert.Equal(t, other, c.Bin)
}

func TestLoadGraceFloor(t *testing.T) {
	_, exe := fakeBin(t)
	for raw, want := range map[string]time.Duration{"0": config.MinGrace, "50": config.MinGrace, "100": config.MinGrace, "101": 101 * time.Millisecond, "3600000": time.Hour} {
		c, err := load(t, exe, "QUEEN_KAFKA_EMBEDDED=true", "QUEEN_KAFKA_ADVERTISED_ADDR=localhost:9092", "QUEEN_KAFKA_SHUTDOWN_GRACE_MS="+raw)
		require.NoError(t, err, raw)
		assert.Equal(t, want, c.Grace, raw)
	}
}

// TestLoadRefusals: each refusal is an error naming the variable at fault.
func TestLoadRefusals(t *testing.T) {
	bin, exe := fakeBin(t)
	dir := filepath.Dir(bin)
	plain := filepath.Join(dir, "plain")
	require.NoError(t, os.WriteFile(plain, nil, 0o644))
	on := []string{"QUEEN_KAFKA_EMBEDDED=true", "QUEEN_KAFKA_ADVERTISED_ADDR=localhost:9092"}
	cases := []struct {
		name    string
		exe     string
		env     []string
		mention []string
	}{
		{"embedded not a bool", exe, []string{"QUEEN_KAFKA_EMBEDDED=yes"}, []string{"QUEEN_KAFKA_EMBEDDED", "yes"}},
		{"bin missing", exe, append(on, "QUEEN_KAFKA_BIN="+filepath.Join(dir, "missing")), []string{"QUEEN_KAFKA_BIN", "missing", "not a file"}},
		{"bin a directory", exe, append(on, "QUEEN_KAFKA_BIN="+dir), []string{"QUEEN_KAFKA_BIN", "not a file"}},
		{"bin not executable", exe, append(on, "QUEEN_KAFKA_BIN="+plain), []string{"QUEEN_KAFKA_BIN", "execute"}},
		{"default bin missing", "/nowhere/queen-dev", on, []string{"QUEEN_KAFKA_BIN", "/nowhere/queen-kafka", "beside"}},
		{"advertised unset", exe, []string{"QUEEN_KAFKA_EMBEDDED=true"}, []string{"QUEEN_KAFKA_ADVERTISED_ADDR"}},
		{"advertised blank", exe, []string{"QUEEN_KAFKA_EMBEDDED=true", "QUEEN_KAFKA_ADVERTISED_ADDR= "}, []string{"QUEEN_KAFKA_ADVERTISED_ADDR"}},
		{"grace not a number", exe, append(on, "QUEEN_KAFKA_SHUTDOWN_GRACE_MS=5s"), []string{"QUEEN_KAFKA_SHUTDOWN_GRACE_MS"}},
		{"grace negative", exe, append(on, "QUEEN_KAFKA_SHUTDOWN_GRACE_MS=-1"), []string{"QUEEN_KAFKA_SHUTDOWN_GRACE_MS"}},
		{"grace above an hour", exe, append(on, "QUEEN_KAFKA_SHUTDOWN_GRACE_MS=3600001"), []string{"QUEEN_KAFKA_SHUTDOWN_GRACE_MS"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := load(t, tc.exe, slices.Clone(tc.env)...)
			require.Error(t, err)
			assert.Nil(t, c)
			for _, m := range tc.mention {
				assert.Contains(t, err.Error(), m)
			}
		})
	}
}

func TestQueenURL(t *testing.T) {
	_, exe := fakeBin(t)
	on := []string{"QUEEN_KAFKA_EMBEDDED=true", "QUEEN_KAFKA_ADVERTISED_ADDR=localhost:9092"}
	bound := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 6632}

	c, err := load(t, exe, append(on, "QUEEN_URL=http://queen-proxy:6711")...)
	require.NoError(t, err)
	url, from := c.queenURL(bound)
	assert.Equal(t, "http://queen-proxy:6711", url)
	assert.Equal(t, FromExplicit, from)

	// An empty QUEEN_URL= is a template that resolved to nothing.
	for _, env := range [][]string{on, append(slices.Clone(on), "QUEEN_URL="), append(slices.Clone(on), "QUEEN_URL=  ")} {
		c, err := load(t, exe, env...)
		require.NoError(t, err)
		url, from := c.queenURL(bound)
		assert.Equal(t, "http://127.0.0.1:6632", url, "%v", env)
		assert.Equal(t, FromLoopback, from)
	}
}

func TestLoopbackURL(t *testing.T) {
	// The wildcard binds a real listener made: v4 any, and Go's default
	// (":0", an IPv6 wildcard that is dual-stack here).
	for _, addr := range []string{"0.0.0.0:0", ":0"} {
		ln, err := net.Listen("tcp", addr)
		require.NoError(t, err)
		port := ln.Addr().(*net.TCPAddr).Port
		assert.Equal(t, "http://127.0.0.1:"+strconv.Itoa(port), loopbackURL(ln.Addr()), addr)
		ln.Close()
	}
	// A concrete address is used as it is.
	assert.Equal(t, "http://127.0.0.2:7000", loopbackURL(&net.TCPAddr{IP: net.ParseIP("127.0.0.2"), Port: 7000}))
	assert.Equal(t, "http://[::1]:7000", loopbackURL(&net.TCPAddr{IP: net.IPv6loopback, Port: 7000}))
	// An IPv6 wildcard that IPv4 does not reach (v6only) is reached on ::1.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close() // nothing listens there now
	assert.Equal(t, "http://[::1]:"+strconv.Itoa(port), loopbackURL(&net.TCPAddr{IP: net.IPv6unspecified, Port: port}))
}

func TestChildEnv(t *testing.T) {
	_, exe := fakeBin(t)
	c, err := load(t, exe, "QUEEN_KAFKA_EMBEDDED=true", "QUEEN_KAFKA_ADVERTISED_ADDR=localhost:9092",
		"QUEEN_URL=", "QUEEN_TOKEN=facade-token", "PG_PASSWORD=pg", "JWT_SECRET=jwt", "QUEEN_ENCRYPTION_KEY=enc",
		"QUEEN_SYNC_SECRET=sync", "QUEEN_DEV_TOKENS=t=tenant", "QUEEN_KAFKA_GROUP_JOIN_DELAY_MS=0", "PATH=/bin")
	require.NoError(t, err)
	env := c.childEnv("http://127.0.0.1:6632")
	assert.Equal(t, []string{"QUEEN_KAFKA_EMBEDDED=true", "QUEEN_KAFKA_ADVERTISED_ADDR=localhost:9092", "QUEEN_TOKEN=facade-token",
		"QUEEN_KAFKA_GROUP_JOIN_DELAY_MS=0", "PATH=/bin", "QUEEN_URL=http://127.0.0.1:6632"}, env,
		"verbatim, QUEEN_TOKEN included, less the broker's secrets, with one QUEEN_URL")
}

func TestAuthWarning(t *testing.T) {
	_, exe := fakeBin(t)
	on := []string{"QUEEN_KAFKA_EMBEDDED=true", "QUEEN_KAFKA_ADVERTISED_ADDR=localhost:9092"}
	cfg := func(env ...string) *Config {
		c, err := load(t, exe, append(slices.Clone(on), env...)...)
		require.NoError(t, err)
		return c
	}
	w := cfg().authWarning(true)
	assert.Contains(t, w, "QUEEN_TOKEN")
	assert.Contains(t, w, "401")
	assert.Empty(t, cfg().authWarning(false), "auth off: the child needs no credential")
	assert.Empty(t, cfg("QUEEN_TOKEN=tok").authWarning(true))
	assert.Empty(t, cfg("QUEEN_KAFKA_SASL=PLAIN").authWarning(true), "each connection brings its own token")
	assert.NotEmpty(t, cfg("QUEEN_TOKEN= ").authWarning(true), "a blank token is no token")
}
