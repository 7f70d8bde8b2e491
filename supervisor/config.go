package supervisor

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/queen-mq/queen-kafka/config"
)

// binName is the facade's file name, looked for beside the broker's own
// executable when QUEEN_KAFKA_BIN is unset.
const binName = "queen-kafka"

// strippedSecrets never reach the child. The first four are the seed's list
// (the broker's database password, JWT signing secret, encryption key and
// sync secret); QUEEN_DEV_TOKENS is queen-dev's token table, its own secret
// of the same kind. The facade reads none of them.
var strippedSecrets = []string{"PG_PASSWORD", "JWT_SECRET", "QUEEN_ENCRYPTION_KEY", "QUEEN_SYNC_SECRET", "QUEEN_DEV_TOKENS"}

// Which branch the child's QUEEN_URL came from, as the boot line says it.
const (
	FromExplicit = "QUEEN_URL (explicit)"
	FromLoopback = "loopback (bound listener)"
)

// Config is embedded mode, validated: the child binary exists and is
// executable, and the child has what it needs to boot.
type Config struct {
	Bin   string        // QUEEN_KAFKA_BIN, absolute
	Grace time.Duration // QUEEN_KAFKA_SHUTDOWN_GRACE_MS, at least config.MinGrace

	explicitURL string   // QUEEN_URL when set and not blank
	environ     []string // the broker's environment, as given
	childAuth   bool     // QUEEN_TOKEN set, or QUEEN_KAFKA_SASL=plain
}

// Load reads embedded mode from environ (os.Environ() in the broker)
// through config.LoadEmbedded. Off, it validates QUEEN_KAFKA_EMBEDDED and
// nothing else and returns nil, nil. On, every refusal is an error naming
// the variable. executable is os.Executable in the broker: the default
// QUEEN_KAFKA_BIN is resolved from it, once, here.
func Load(ctx context.Context, environ []string, executable func() (string, error)) (*Config, error) {
	e, err := config.LoadEmbedded(ctx, envconfig.MapLookuper(envMap(environ)))
	if e == nil || err != nil {
		return nil, err
	}
	if err := supported(); err != nil {
		return nil, err
	}
	c := &Config{Grace: e.Grace, explicitURL: e.QueenURL, environ: slices.Clone(environ), childAuth: e.ChildAuth}
	if c.Bin, err = resolveBin(e.Bin, executable); err != nil {
		return nil, err
	}
	return c, nil
}

// envMap is environ as a lookup table; the first of two entries for one
// name wins, as it does for os.Getenv.
func envMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if _, seen := m[k]; ok && !seen {
			m[k] = v
		}
	}
	return m
}

// resolveBin is QUEEN_KAFKA_BIN, or the queen-kafka file beside the
// running executable, made absolute and checked to be an executable file:
// a wrong path is a boot refusal rather than a crash loop.
func resolveBin(bin string, executable func() (string, error)) (string, error) {
	const v = "QUEEN_KAFKA_BIN"
	what := fmt.Sprintf("%s=%q", v, bin)
	if bin == "" {
		exe, err := executable()
		if err != nil {
			return "", fmt.Errorf("%s is unset and the default (the %s file beside this executable) cannot be found: %w", v, binName, err)
		}
		bin = filepath.Join(filepath.Dir(exe), binName)
		what = fmt.Sprintf("%s is unset and its default %q (the %s file beside this executable)", v, bin, binName)
	}
	abs, err := filepath.Abs(bin)
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	fi, err := os.Stat(abs)
	switch {
	case err != nil:
		return "", fmt.Errorf("%s is not a file: %w", what, err)
	case !fi.Mode().IsRegular():
		return "", fmt.Errorf("%s is not a file (mode %s)", what, fi.Mode())
	case fi.Mode().Perm()&0o111 == 0:
		return "", fmt.Errorf("%s is a file nobody may execute (mode %s)", what, fi.Mode())
	}
	return abs, nil
}

// queenURL is the child's QUEEN_URL and which branch it came from: an
// explicit, non-blank QUEEN_URL wins; otherwise the loopback of the address
// the broker's listener actually bound.
func (c *Config) queenURL(bound net.Addr) (url, from string) {
	if c.explicitURL != "" {
		return c.explicitURL, FromExplicit
	}
	return loopbackURL(bound), FromLoopback
}

// loopbackURL reaches bound from this host. A concrete address is used as
// it is (a listener bound to 127.0.0.2 or to one interface is reached
// there); a wildcard becomes a loopback of its family. An IPv6 wildcard is
// dual-stack unless the system says v6only, so 127.0.0.1 is tried first
// (::1 is missing where IPv6 is disabled on the loopback interface, as in
// many containers) and ::1 is the answer when IPv4 does not connect.
func loopbackURL(bound net.Addr) string {
	tcp, ok := bound.(*net.TCPAddr)
	if !ok {
		return "http://" + bound.String()
	}
	port := strconv.Itoa(tcp.Port)
	host := tcp.IP.String()
	switch {
	case tcp.IP == nil || tcp.IP.To4() != nil && tcp.IP.IsUnspecified():
		host = "127.0.0.1"
	case tcp.IP.IsUnspecified():
		host = "::1"
		if conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", port), time.Second); err == nil {
			conn.Close()
			host = "127.0.0.1"
		}
	}
	return "http://" + net.JoinHostPort(host, port)
}

// childEnv is the broker's environment, verbatim (QUEEN_TOKEN included:
// it is the child's own credential), less the broker's secrets, with
// QUEEN_URL replaced by url.
func (c *Config) childEnv(url string) []string {
	out := make([]string, 0, len(c.environ)+1)
	for _, kv := range c.environ {
		k, _, _ := strings.Cut(kv, "=")
		if k == "QUEEN_URL" || slices.Contains(strippedSecrets, k) {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "QUEEN_URL="+url)
}

// authWarning is the seed's third mistake, a warning and not a refusal:
// with the broker's auth on and the child holding no credential, every
// produce and fetch the child makes is answered 401.
func (c *Config) authWarning(brokerAuth bool) string {
	if !brokerAuth || c.childAuth {
		return ""
	}
	return "broker auth is on (QUEEN_DEV_TOKENS) and the embedded facade has neither QUEEN_TOKEN nor QUEEN_KAFKA_SASL=plain: " +
		"every produce and fetch it makes will be answered 401; set QUEEN_TOKEN to one of the broker's tokens"
}
