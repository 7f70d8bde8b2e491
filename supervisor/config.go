package supervisor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sethvargo/go-envconfig"
)

// Grace bounds (QUEEN_KAFKA_SHUTDOWN_GRACE_MS). The floor is the seed's: a
// grace of zero is a SIGKILL with extra steps. The ceiling only refuses
// nonsense: a stop that may take more than an hour is a typo.
const (
	DefaultGrace = 5 * time.Second
	MinGrace     = 100 * time.Millisecond
	maxGraceMs   = 3_600_000
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
	Grace time.Duration // QUEEN_KAFKA_SHUTDOWN_GRACE_MS, at least MinGrace

	explicitURL string   // QUEEN_URL when set and not blank
	environ     []string // the broker's environment, as given
	childAuth   bool     // QUEEN_TOKEN set, or QUEEN_KAFKA_SASL=plain
}

// switchVar is the only variable read while embedded mode is off.
type switchVar struct {
	Embedded string `env:"QUEEN_KAFKA_EMBEDDED, default=false"`
}

// rawConfig is what embedded mode reads once it is on: its own two
// variables, and the few of the child's it checks (the advertised address
// for the refusal, QUEEN_URL for the wiring, the credentials for the
// warning). Everything else the child validates itself.
type rawConfig struct {
	Bin            string `env:"QUEEN_KAFKA_BIN"`
	Grace          string `env:"QUEEN_KAFKA_SHUTDOWN_GRACE_MS, default=5000"`
	AdvertisedAddr string `env:"QUEEN_KAFKA_ADVERTISED_ADDR"`
	QueenURL       string `env:"QUEEN_URL"`
	QueenToken     string `env:"QUEEN_TOKEN"`
	SASL           string `env:"QUEEN_KAFKA_SASL"`
}

// blankIsUnset makes a present-but-blank variable count as unset, the rule
// every variable of the operator page follows (an empty value in a Compose
// file is a variable somebody meant to set, never a value).
type blankIsUnset struct{ l envconfig.Lookuper }

func (b blankIsUnset) Lookup(key string) (string, bool) {
	v, ok := b.l.Lookup(key)
	v = strings.TrimSpace(v)
	return v, ok && v != ""
}

// Load reads embedded mode from environ (os.Environ() in the broker).
// Off, it reads QUEEN_KAFKA_EMBEDDED and nothing else and returns nil, nil.
// On, every refusal is an error naming the variable. executable is
// os.Executable in the broker: the default QUEEN_KAFKA_BIN is resolved
// from it, once, here.
func Load(ctx context.Context, environ []string, executable func() (string, error)) (*Config, error) {
	l := blankIsUnset{envconfig.MapLookuper(envMap(environ))}
	var sw switchVar
	if err := envconfig.ProcessWith(ctx, &envconfig.Config{Target: &sw, Lookuper: l}); err != nil {
		return nil, fmt.Errorf("embedded mode configuration: %w", err)
	}
	switch sw.Embedded {
	case "false":
		return nil, nil
	case "true":
	default:
		return nil, fmt.Errorf("QUEEN_KAFKA_EMBEDDED=%q is invalid: expected true or false", sw.Embedded)
	}
	if err := supported(); err != nil {
		return nil, err
	}
	var raw rawConfig
	if err := envconfig.ProcessWith(ctx, &envconfig.Config{Target: &raw, Lookuper: l}); err != nil {
		return nil, fmt.Errorf("embedded mode configuration: %w", err)
	}
	c := &Config{explicitURL: raw.QueenURL, environ: slices.Clone(environ)}
	var err error
	if c.Bin, err = resolveBin(raw.Bin, executable); err != nil {
		return nil, err
	}
	if c.Grace, err = parseGrace(raw.Grace); err != nil {
		return nil, err
	}
	if raw.AdvertisedAddr == "" {
		return nil, errors.New("QUEEN_KAFKA_ADVERTISED_ADDR is required with QUEEN_KAFKA_EMBEDDED=true: it is the host:port Kafka clients " +
			"are told to connect to after bootstrap and has no default, so a facade started without it would refuse to boot and be restarted forever")
	}
	c.childAuth = raw.QueenToken != "" || strings.EqualFold(raw.SASL, "plain")
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

func parseGrace(raw string) (time.Duration, error) {
	ms, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || ms < 0 || ms > maxGraceMs {
		return 0, fmt.Errorf("QUEEN_KAFKA_SHUTDOWN_GRACE_MS=%q is invalid: expected an integer in 0 to %d (milliseconds; below %d counts as %d)",
			raw, maxGraceMs, MinGrace.Milliseconds(), MinGrace.Milliseconds())
	}
	return max(time.Duration(ms)*time.Millisecond, MinGrace), nil
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
