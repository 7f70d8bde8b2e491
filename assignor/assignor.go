package assignor

// Member is one member of a group as an assignor sees it.
type Member struct {
	ID         string
	InstanceID string // group.instance.id of a static member, "" otherwise
	Rack       string
	// Topics are the member's subscribed topic names, already resolved
	// (a regular expression expanded against the catalogue); a topic absent
	// from Spec.Partitions is ignored.
	Topics []string
	// Owned is the member's current target assignment (topic → partitions),
	// which a sticky assignor keeps where balance allows.
	Owned map[string][]int32
}

// Spec is one group's input to an assignor.
type Spec struct {
	Members    []Member
	Partitions map[string]int32 // topic → partition count
}

// Assignment maps member id → topic → partitions in ascending order. Every
// member of the Spec has an entry, possibly empty; a topic with no
// partitions assigned to a member is absent from its map.
type Assignment map[string]map[string][]int32

// Assignor computes a group's target assignment.
type Assignor interface {
	// Name is the name members send as server_assignor.
	Name() string
	// Assign must assign every partition of every subscribed topic to
	// exactly one member subscribed to it, and nothing else.
	Assign(Spec) Assignment
}

// Default is the assignor a group uses when no member names one: Kafka's
// group.consumer.assignors default starts with uniform.
const Default = "uniform"

// ByName returns the assignor a member names, ok false for a name this
// broker does not offer (Kafka answers UNSUPPORTED_ASSIGNOR).
func ByName(name string) (Assignor, bool) {
	switch name {
	case "uniform":
		return Uniform(), true
	case "range":
		return Range(), true
	}
	return nil, false
}

// Uniform is Kafka's uniform assignor (KIP-848's default): balanced, then
// sticky. See the package documentation for what it guarantees.
func Uniform() Assignor { return uniform{} }

// Range is Kafka 4's server-side range assignor: co-partitioned contiguous
// ranges, sticky only through instance ids. See the package documentation.
func Range() Assignor { return rangeAssignor{} }
