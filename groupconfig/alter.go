package groupconfig

import (
	"maps"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Op is one config of an alter request.
type Op struct {
	Name  string
	Kind  kmsg.IncrementalAlterConfigOp
	Value *string
}

// IncrementalOps is an IncrementalAlterConfigs resource's configs as Ops.
func IncrementalOps(cfgs []kmsg.IncrementalAlterConfigsRequestResourceConfig) []Op {
	out := make([]Op, len(cfgs))
	for i, c := range cfgs {
		out[i] = Op{Name: c.Name, Kind: c.Op, Value: c.Value}
	}
	return out
}

// LegacyOps is a legacy AlterConfigs resource's configs, each a SET.
func LegacyOps(cfgs []kmsg.AlterConfigsRequestResourceConfig) []Op {
	out := make([]Op, len(cfgs))
	for i, c := range cfgs {
		out[i] = Op{Name: c.Name, Kind: kmsg.IncrementalAlterConfigOpSet, Value: c.Value}
	}
	return out
}

// ApplyIncremental is Kafka's ConfigurationControlManager applying an
// IncrementalAlterConfigs resource to a group's overrides, in order: SET
// puts a value, DELETE removes it (absent or not), and APPEND or SUBTRACT
// is refused, no group config being a list. The result is not validated
// (Broker.Validate does, as Kafka validates after applying) and current is
// not changed. A null SET never reaches here (configres.Preprocess
// refuses it, as Kafka's ConfigAdminManager does).
func ApplyIncremental(current map[string]string, ops []Op) (map[string]string, error) {
	next := maps.Clone(current)
	if next == nil {
		next = map[string]string{}
	}
	for _, op := range ops {
		switch op.Kind {
		case kmsg.IncrementalAlterConfigOpSet:
			v := ""
			if op.Value != nil {
				v = *op.Value
			}
			next[op.Name] = v
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(next, op.Name)
		case kmsg.IncrementalAlterConfigOpAppend:
			return nil, invalid("Can't APPEND to key %s because its type is not LIST.", op.Name)
		case kmsg.IncrementalAlterConfigOpSubtract:
			return nil, invalid("Can't SUBTRACT to key %s because its type is not LIST.", op.Name)
		default:
			return nil, invalid("Unknown alter config operation %d for %s", op.Kind, op.Name)
		}
	}
	return next, nil
}

// ApplyLegacy is the legacy AlterConfigs: the request's configs replace the
// group's overrides whole (a config it does not name returns to its
// default), as Kafka's legacyAlterConfigResource does.
func ApplyLegacy(_ map[string]string, ops []Op) (map[string]string, error) {
	next := make(map[string]string, len(ops))
	for _, op := range ops {
		if op.Value != nil {
			next[op.Name] = *op.Value
		}
	}
	return next, nil
}

// canonicalize is overrides with every value in its canonical form (as
// Kafka's describe shows a stored value: parsed and printed back). It is
// called on validated overrides only.
func canonicalize(overrides map[string]string) map[string]string {
	out := make(map[string]string, len(overrides))
	for n, v := range overrides {
		if d, ok := lookup(n); ok {
			if c, err := canonical(d, v); err == nil {
				v = c
			}
		}
		out[n] = v
	}
	return out
}
