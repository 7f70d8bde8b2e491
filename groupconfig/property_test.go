package groupconfig

import (
	"context"
	"maps"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/internal/testsupport/memkv"
)

// modelConfig is the model's own reading of Kafka 4.2's GroupConfig,
// written apart from defs: an int's floor and bounds, or a string's
// allowed values.
type modelConfig struct {
	floor, lo, hi int64
	strs          []string
	boolean       bool
}

var model = map[string]modelConfig{
	ConsumerSessionTimeout:       {floor: 1, lo: 45000, hi: 60000},
	ConsumerHeartbeatInterval:    {floor: 1, lo: 5000, hi: 15000},
	ShareSessionTimeout:          {floor: 1, lo: 45000, hi: 60000},
	ShareHeartbeatInterval:       {floor: 1, lo: 5000, hi: 15000},
	ShareRecordLockDuration:      {floor: 1000, lo: 15000, hi: 60000},
	ShareDeliveryCountLimit:      {floor: 2, lo: 2, hi: 10},
	SharePartitionMaxRecordLocks: {floor: 100, lo: 100, hi: 10000},
	ShareAutoOffsetReset:         {strs: []string{"latest", "earliest", "by_duration:pt1h", "by_duration:p1d"}},
	ShareIsolationLevel:          {strs: []string{"read_committed", "read_uncommitted"}},
	ShareRenewAcknowledgeEnable:  {boolean: true},
	StreamsSessionTimeout:        {floor: 1, lo: 45000, hi: 60000},
	StreamsHeartbeatInterval:     {floor: 1, lo: 5000, hi: 15000},
	StreamsNumStandbyReplicas:    {floor: 0, lo: 0, hi: 2},
	StreamsInitialRebalanceDelay: {floor: 0, lo: 0, hi: 1 << 31},
}

var modelDefaults = map[string]int64{ConsumerSessionTimeout: 45000, ConsumerHeartbeatInterval: 5000, ShareSessionTimeout: 45000, ShareHeartbeatInterval: 5000, StreamsSessionTimeout: 45000, StreamsHeartbeatInterval: 5000}

// modelValid says whether Kafka accepts overrides as a group's configs.
func modelValid(o map[string]string) bool {
	ints := maps.Clone(modelDefaults)
	for name, v := range o {
		m, ok := model[name]
		if !ok {
			return false
		}
		v = strings.TrimSpace(v)
		switch {
		case m.boolean:
			if l := strings.ToLower(v); l != "true" && l != "false" {
				return false
			}
		case m.strs != nil:
			found := false
			for _, s := range m.strs {
				if name == ShareAutoOffsetReset && strings.EqualFold(s, v) || s == v {
					found = true
				}
			}
			if !found {
				return false
			}
		default:
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil || n < m.floor || n < m.lo || n > m.hi {
				return false
			}
			ints[name] = n
		}
	}
	return ints[ConsumerSessionTimeout] > ints[ConsumerHeartbeatInterval] &&
		ints[ShareSessionTimeout] > ints[ShareHeartbeatInterval] &&
		ints[StreamsSessionTimeout] > ints[StreamsHeartbeatInterval]
}

// randomValue is a value of name, valid or not.
func randomValue(r *rand.Rand, name string) string {
	m, ok := model[name]
	switch {
	case !ok || r.IntN(8) == 0:
		return []string{"", "x", "-1", "1e3", "99999999999", "  ", "TRUE", "by_duration:-PT1H"}[r.IntN(8)]
	case m.boolean:
		return []string{"true", "false", "True", "no"}[r.IntN(4)]
	case m.strs != nil:
		v := m.strs[r.IntN(len(m.strs))]
		if r.IntN(3) == 0 {
			v = strings.ToUpper(v)
		}
		return v
	}
	lo, hi := m.lo, min(m.hi, m.lo+20000)
	n := lo - 2 + r.Int64N(hi-lo+4)
	s := strconv.FormatInt(n, 10)
	if r.IntN(5) == 0 {
		s = " " + s
	}
	return s
}

// TestAlterAgainstModel runs random IncrementalAlterConfigs and
// AlterConfigs requests (SET, DELETE, APPEND, SUBTRACT; known and unknown
// names; valid and invalid values; some validate_only) through two Stores
// sharing one KV, and checks every answer and the stored overrides against
// the model: a request is applied whole or refused whole (INVALID_CONFIG),
// APPEND and SUBTRACT always refused, validate_only never writes.
func TestAlterAgainstModel(t *testing.T) {
	names := append(Names(), "no.such.config", "group.share.record.lock.duration.ms")
	kinds := []kmsg.IncrementalAlterConfigOp{kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpDelete, kmsg.IncrementalAlterConfigOpDelete, kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract}
	for seed := uint64(0); seed < 200; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		ctx := context.Background()
		kv := memkv.New()
		nodes := []*Store{New(Config{TTL: -1}), New(Config{TTL: -1})}
		state := map[string]string{} // the model's overrides, canonical
		for step := 0; step < 40; step++ {
			var ops []Op
			for range 1 + r.IntN(3) {
				name := names[r.IntN(len(names))]
				v := randomValue(r, name)
				ops = append(ops, Op{Name: name, Kind: kinds[r.IntN(len(kinds))], Value: &v})
			}
			legacy := r.IntN(5) == 0
			validateOnly := r.IntN(6) == 0
			// The model: sequential application, then Kafka's validation.
			next, refused := maps.Clone(state), false
			if legacy {
				next = map[string]string{}
			}
			for _, op := range ops {
				switch {
				case legacy || op.Kind == kmsg.IncrementalAlterConfigOpSet:
					next[op.Name] = *op.Value
				case op.Kind == kmsg.IncrementalAlterConfigOpDelete:
					delete(next, op.Name)
				default:
					refused = true
				}
			}
			refused = refused || !modelValid(next)
			var out Outcome
			node := nodes[r.IntN(2)]
			if legacy {
				lops := make([]kmsg.AlterConfigsRequestResourceConfig, len(ops))
				for i, op := range ops {
					lops[i] = kmsg.AlterConfigsRequestResourceConfig{Name: op.Name, Value: op.Value}
				}
				out = node.Alter(ctx, kv, "g", LegacyOps(lops), ApplyLegacy, validateOnly)
			} else {
				out = node.Alter(ctx, kv, "g", ops, ApplyIncremental, validateOnly)
			}
			if refused != (out.Code == kerr.InvalidConfig.Code) || (!refused && out.Code != 0) {
				t.Fatalf("seed %d step %d: %+v legacy=%v on %v: answered %+v, model refused=%v", seed, step, ops, legacy, state, out, refused)
			}
			if !refused && !validateOnly {
				state = map[string]string{}
				for n, v := range next {
					state[n] = canonicalModel(n, v)
				}
			}
			got, err := nodes[r.IntN(2)].Overrides(ctx, kv, "g")
			if err != nil || !maps.Equal(got, state) {
				t.Fatalf("seed %d step %d: stored %v (%v), model %v", seed, step, got, err, state)
			}
		}
	}
}

// canonicalModel is a valid value as describe shows it.
func canonicalModel(name, v string) string {
	v = strings.TrimSpace(v)
	m := model[name]
	switch {
	case m.boolean:
		return strings.ToLower(v)
	case m.strs != nil:
		return v
	}
	n, _ := strconv.ParseInt(v, 10, 64)
	return strconv.FormatInt(n, 10)
}
