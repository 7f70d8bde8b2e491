package config

import (
	"context"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/sethvargo/go-envconfig"
	"github.com/stretchr/testify/require"
)

// TestVariablesAreTheConfigDefinition: every field of the declaration is one
// variable of --help, in order, with the env tag's name and default.
func TestVariablesAreTheConfigDefinition(t *testing.T) {
	typ := reflect.TypeFor[declaration]()
	vars := Variables(AllModes)
	require.Len(t, vars, typ.NumField())
	for i, v := range vars {
		name, opts, _ := strings.Cut(typ.Field(i).Tag.Get("env"), ",")
		require.Equal(t, name, v.Name)
		if d, ok := strings.CutPrefix(strings.TrimSpace(opts), "default="); ok {
			require.Equal(t, d, v.Default, v.Name)
		}
		require.NotEmpty(t, v.Help, v.Name)
		require.NotEmpty(t, v.Accepts, v.Name)
	}
}

// TestRangesAreWhatTheLoaderChecks: each integer variable's range in
// --help is the one LoadFacade enforces: its bounds load, one past either
// is refused naming the variable.
func TestRangesAreWhatTheLoaderChecks(t *testing.T) {
	for _, v := range Variables(FacadeMode) {
		if !v.Ranged {
			continue
		}
		t.Run(v.Name, func(t *testing.T) {
			env := func(val int64) map[string]string {
				e := baseEnv()
				// The cluster's variables are read in cluster mode only.
				e["QUEEN_KAFKA_NODE_ID"], e["QUEEN_TOKEN"] = "1", "t"
				e[v.Name] = strconv.FormatInt(val, 10)
				return e
			}
			for _, bad := range []int64{v.Min - 1, v.Max + 1} {
				_, err := LoadFacade(context.Background(), envconfig.MapLookuper(env(bad)))
				require.ErrorContains(t, err, v.Name+"=", "value %d", bad)
				require.ErrorContains(t, err, "expected an integer in "+strconv.FormatInt(v.Min, 10)+" to "+strconv.FormatInt(v.Max, 10))
			}
			for _, good := range []int64{v.Min, v.Max} {
				_, err := LoadFacade(context.Background(), envconfig.MapLookuper(env(good)))
				if err != nil {
					// A bound may be refused by a rule across variables
					// (the TTL against the heartbeat, the minimum session
					// against the maximum): never by its own range.
					require.NotContains(t, err.Error(), v.Name+"=", "value %d", good)
				}
			}
		})
	}
}

// TestHelpListsEveryVariable: --help is each variable's name, default,
// what it accepts and its meaning, in the definition's order.
func TestHelpListsEveryVariable(t *testing.T) {
	var b strings.Builder
	require.NoError(t, WriteFacadeHelp(&b, "queen-kafka"))
	out := b.String()
	at := 0
	for _, v := range Variables(FacadeMode) {
		def := "no default"
		if v.Default != "" {
			def = "default " + v.Default
		}
		entry := "  " + v.Name + "\n      " + def + "; " + v.Accepts + "\n      " + v.Help + "\n"
		i := strings.Index(out[at:], entry)
		require.GreaterOrEqual(t, i, 0, "--help lacks, or misorders:\n%s", entry)
		at += i + len(entry)
	}
	require.Contains(t, out, "QUEEN_KAFKA_DEFAULT_PARTITIONS\n      default 1024; an integer in 1 to 100000\n")
	require.Contains(t, out, "QUEEN_KAFKA_CLUSTER\n      default queen;")
}
