package config

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sethvargo/go-envconfig"
)

// ExitConfig is the facade's exit status when its configuration is refused
// at boot (sysexits' EX_CONFIG): the same environment is refused again, so
// embedded mode's supervisor does not restart it. It is not 2, which is
// also what Go's runtime exits with on a panic or a fatal error (its own
// out-of-memory among them): a child that crashed must come back.
const ExitConfig = 78

// MinGrace is QUEEN_KAFKA_SHUTDOWN_GRACE_MS's floor, the seed's: a grace of
// zero is a SIGKILL with extra steps. The range's ceiling (an hour) only
// refuses nonsense: a stop that may take longer is a typo.
const MinGrace = 100 * time.Millisecond

// Embedded is embedded mode as queen-dev's supervisor reads it, validated
// as far as variables go: the facade binary itself is the supervisor's to
// resolve and check.
type Embedded struct {
	Bin   string        // QUEEN_KAFKA_BIN as given; "" is the queen-kafka file beside queen-dev
	Grace time.Duration // QUEEN_KAFKA_SHUTDOWN_GRACE_MS, at least MinGrace

	// QueenURL is QUEEN_URL when set, "" when the child's is the loopback
	// of queen-dev's own listener.
	QueenURL string
	// ChildAuth: QUEEN_TOKEN is set, or QUEEN_KAFKA_SASL=plain, so the
	// child has a credential for a broker whose auth is on.
	ChildAuth bool
}

// LoadEmbedded reads embedded mode through l. Off, it validates
// QUEEN_KAFKA_EMBEDDED and nothing else and returns nil, nil. On, every
// refusal is an error naming the variable. Everything else the child
// reads, the child validates itself.
func LoadEmbedded(ctx context.Context, l envconfig.Lookuper) (*Embedded, error) {
	raw, env, err := read(ctx, l, EmbeddedMode)
	if err != nil {
		return nil, err
	}
	switch raw.Embedded {
	case "false":
		return nil, nil
	case "true":
	default:
		return nil, fmt.Errorf("QUEEN_KAFKA_EMBEDDED=%q is invalid: expected true or false", raw.Embedded)
	}
	c := &Embedded{Bin: raw.Bin, ChildAuth: raw.QueenToken != "" || strings.EqualFold(raw.SASL, "plain")}
	if env.set["QUEEN_URL"] {
		c.QueenURL = raw.QueenURL
	}
	grace, err := raw.integer("Grace")
	if err != nil {
		return nil, fmt.Errorf("%w (milliseconds; below %d counts as %d)", err, MinGrace.Milliseconds(), MinGrace.Milliseconds())
	}
	c.Grace = max(ms(grace), MinGrace)
	if raw.AdvertisedAddr == "" {
		return nil, errors.New("QUEEN_KAFKA_ADVERTISED_ADDR is required with QUEEN_KAFKA_EMBEDDED=true: it is the host:port Kafka clients " +
			"are told to connect to after bootstrap and has no default, so a facade started without it would refuse to boot and be restarted forever")
	}
	return c, nil
}
