package config

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/sethvargo/go-envconfig"
	"github.com/stretchr/testify/require"
)

func loadEmbedded(env map[string]string) (*Embedded, error) {
	return LoadEmbedded(context.Background(), envconfig.MapLookuper(env))
}

// Embedded mode's ranges are what LoadEmbedded checks, as the facade's are
// what LoadFacade checks; the grace's floor applies after its range.
func TestEmbeddedRangesAreWhatTheLoaderChecks(t *testing.T) {
	for _, v := range Variables(EmbeddedMode) {
		if !v.Ranged {
			continue
		}
		env := func(val int64) map[string]string {
			return map[string]string{"QUEEN_KAFKA_EMBEDDED": "true", "QUEEN_KAFKA_ADVERTISED_ADDR": "localhost:9092", v.Name: strconv.FormatInt(val, 10)}
		}
		for _, bad := range []int64{v.Min - 1, v.Max + 1} {
			_, err := loadEmbedded(env(bad))
			require.ErrorContains(t, err, v.Name+"=", "value %d", bad)
			require.ErrorContains(t, err, "expected an integer in "+strconv.FormatInt(v.Min, 10)+" to "+strconv.FormatInt(v.Max, 10))
		}
		for _, good := range []int64{v.Min, v.Max} {
			_, err := loadEmbedded(env(good))
			require.NoError(t, err, "%s=%d", v.Name, good)
		}
	}
}

// Embedded mode reads its own variables and the few of the child's it
// checks, never the rest: a value only the child would refuse is the
// child's to refuse. An unset QUEEN_URL is not its default here.
func TestEmbeddedReadsItsOwnVariables(t *testing.T) {
	e, err := loadEmbedded(map[string]string{"QUEEN_KAFKA_EMBEDDED": "true", "QUEEN_KAFKA_ADVERTISED_ADDR": "localhost:9092",
		"QUEEN_KAFKA_DEFAULT_PARTITIONS": "many", "QUEEN_DEV_FAULTS": "perhaps"})
	require.NoError(t, err)
	require.Equal(t, &Embedded{Grace: 5 * time.Second}, e)

	e, err = loadEmbedded(map[string]string{"QUEEN_KAFKA_EMBEDDED": "true", "QUEEN_KAFKA_ADVERTISED_ADDR": "localhost:9092",
		"QUEEN_URL": " http://queen:6632 ", "QUEEN_KAFKA_SASL": "Plain", "QUEEN_KAFKA_BIN": "./bin/queen-kafka"})
	require.NoError(t, err)
	require.Equal(t, &Embedded{Bin: "./bin/queen-kafka", Grace: 5 * time.Second, QueenURL: "http://queen:6632", ChildAuth: true}, e)

	_, err = LoadDev(context.Background(), envconfig.MapLookuper(map[string]string{"QUEEN_KAFKA_EMBEDDED": "yes", "QUEEN_URL": "ftp://x"}))
	require.NoError(t, err, "queen-dev's own broker reads neither")
}
