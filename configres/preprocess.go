package configres

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// entry is one config of an alter request, as the checks below see it.
type entry struct {
	name     string
	op       kmsg.IncrementalAlterConfigOp
	hasValue bool
}

// Resource is one resource of an alter request, as Preprocess reads it
// (IncrementalResources and LegacyResources make them).
type Resource struct {
	typ     kmsg.ConfigResourceType
	name    string
	entries []entry
}

// Preprocess is Kafka's ConfigAdminManager.preprocess, which every alter
// passes before a topic is touched: per resource, an outcome and whether it
// is final (a refusal, or a BROKER resource, which the facade answers here
// whole). incremental is IncrementalAlterConfigs (its ops are checked,
// DELETE may carry no value), otherwise the legacy AlterConfigs; self is
// this node's broker id, the only broker resource it alters.
func Preprocess(resources []Resource, incremental bool, self int32) []Outcome {
	out := make([]Outcome, len(resources))
	type key struct {
		typ  kmsg.ConfigResourceType
		name string
	}
	first := make(map[key]int, len(resources))
	for i, r := range resources {
		k := key{r.typ, r.name}
		if j, dup := first[k]; dup {
			for _, x := range []int{i, j} {
				out[x] = Outcome{Done: true, Code: kerr.InvalidRequest.Code, Msg: "Each resource must appear at most once."}
			}
			continue
		}
		first[k] = i
	}
	for i, r := range resources {
		if !out[i].Done {
			out[i] = preprocessResource(r, incremental, self)
		}
	}
	return out
}

// Outcome is one resource's preprocessing: Done means Code and Msg are its
// answer (Code 0 a success); otherwise the resource goes on to be altered.
type Outcome struct {
	Code int16
	Msg  string
	Done bool
}

func preprocessResource(r Resource, incremental bool, self int32) Outcome {
	refuse := func(msg string) Outcome {
		return Outcome{Done: true, Code: kerr.InvalidRequest.Code, Msg: msg}
	}
	seen := make(map[string]bool, len(r.entries))
	var nulls []string
	for _, e := range r.entries {
		if seen[e.name] {
			return refuse("Error due to duplicate config keys")
		}
		seen[e.name] = true
		if !e.hasValue && (!incremental || e.op != kmsg.IncrementalAlterConfigOpDelete) {
			nulls = append(nulls, e.name)
		}
	}
	if len(nulls) > 0 {
		return refuse("Null value not supported for : " + strings.Join(nulls, ", "))
	}
	broker := r.typ == kmsg.ConfigResourceTypeBroker
	if broker && r.name != "" {
		id, err := strconv.ParseInt(r.name, 10, 32)
		if err != nil {
			return refuse(fmt.Sprintf("Node id must be an integer, but it is: %s", r.name))
		}
		if int32(id) != self {
			return refuse(fmt.Sprintf("Unexpected broker id, expected %d, but received %s", self, r.name))
		}
	}
	if incremental {
		// Kafka checks the operation on the broker resource; an unknown one is
		// a malformed request whatever the resource, so it is refused for
		// every resource the same way rather than as a bad config value.
		for _, e := range r.entries {
			if e.op < kmsg.IncrementalAlterConfigOpSet || e.op > kmsg.IncrementalAlterConfigOpSubtract {
				return refuse(fmt.Sprintf("Unknown operations type %d", e.op))
			}
		}
	}
	if !broker {
		return Outcome{}
	}
	// Every broker config here is the facade's environment, read at boot:
	// none can be updated dynamically, which Kafka answers for a static
	// config with this sentence (DynamicBrokerConfig.validateConfigs) and
	// INVALID_REQUEST (KAFKA-13609). Removing a dynamic value that was never
	// set changes nothing, and so succeeds, as on Kafka.
	var names []string
	for _, e := range r.entries {
		if !incremental || e.op != kmsg.IncrementalAlterConfigOpDelete {
			names = append(names, e.name)
		}
	}
	if len(names) > 0 {
		return refuse(fmt.Sprintf("Cannot update these configs dynamically: Set(%s)", strings.Join(names, ", ")))
	}
	return Outcome{Done: true}
}

// IncrementalResources is an IncrementalAlterConfigs request's resources
// as Preprocess reads them.
func IncrementalResources(rs []kmsg.IncrementalAlterConfigsRequestResource) []Resource {
	out := make([]Resource, len(rs))
	for i, r := range rs {
		out[i] = Resource{typ: r.ResourceType, name: r.ResourceName}
		for _, c := range r.Configs {
			out[i].entries = append(out[i].entries, entry{name: c.Name, op: c.Op, hasValue: c.Value != nil})
		}
	}
	return out
}

// LegacyResources is an AlterConfigs request's resources as Preprocess
// reads them: every config a SET.
func LegacyResources(rs []kmsg.AlterConfigsRequestResource) []Resource {
	out := make([]Resource, len(rs))
	for i, r := range rs {
		out[i] = Resource{typ: r.ResourceType, name: r.ResourceName}
		for _, c := range r.Configs {
			out[i].entries = append(out[i].entries, entry{name: c.Name, hasValue: c.Value != nil})
		}
	}
	return out
}
