package config

import (
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
)

// Mode is a set of the programs that read a variable.
type Mode uint8

const (
	FacadeMode   Mode = 1 << iota // cmd/queen-kafka
	EmbeddedMode                  // queen-dev's supervisor of the facade (package supervisor)
	DevMode                       // queen-dev's own broker (cmd/queen-dev, queen/dev)

	AllModes = FacadeMode | EmbeddedMode | DevMode
)

// modeNames are the modes tag's words and how the variable table names each mode.
var modeNames = []struct {
	mode       Mode
	tag, label string
}{
	{FacadeMode, "facade", "queen-kafka"},
	{EmbeddedMode, "embedded", "embedded"},
	{DevMode, "dev", "queen-dev"},
}

// String is the modes' variable-table labels, comma-separated.
func (m Mode) String() string {
	var out []string
	for _, n := range modeNames {
		if m&n.mode != 0 {
			out = append(out, n.label)
		}
	}
	return strings.Join(out, ", ")
}

// Variable is one environment variable as --help and the variable table list it,
// read from the declaration's tags: the tags go-envconfig reads for the
// name and default, and the loaders for an integer's range.
type Variable struct {
	Name    string
	Default string // "" when there is none
	Accepts string // "an integer in 1 to 64", or what else it takes
	Help    string // one line of meaning
	Modes   Mode   // the programs that read it

	Ranged   bool // an integer in Min to Max
	Min, Max int64

	field string
}

// variables is the declaration's fields in order, parsed once.
var variables = func() []Variable {
	t := reflect.TypeFor[declaration]()
	out := make([]Variable, 0, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		out = append(out, parseVariable(t.Field(i)))
	}
	return out
}()

// parseVariable reads one field's tags; a tag the loaders could not use is
// a programming error, found by every test that loads a configuration.
func parseVariable(f reflect.StructField) Variable {
	env, _ := f.Tag.Lookup("env")
	name, opts, _ := strings.Cut(env, ",")
	v := Variable{Name: strings.TrimSpace(name), Help: f.Tag.Get("help"), Accepts: f.Tag.Get("accepts"), field: f.Name}
	for _, o := range strings.Split(opts, ",") {
		if d, ok := strings.CutPrefix(strings.TrimSpace(o), "default="); ok {
			v.Default = d
		}
	}
	for _, m := range strings.Split(f.Tag.Get("modes"), ",") {
		known := false
		for _, n := range modeNames {
			if strings.TrimSpace(m) == n.tag {
				v.Modes |= n.mode
				known = true
			}
		}
		if !known {
			panic(fmt.Sprintf("declaration.%s: modes tag %q is not a list of facade, embedded and dev", f.Name, f.Tag.Get("modes")))
		}
	}
	if r, ok := f.Tag.Lookup("range"); ok {
		lo, hi, found := strings.Cut(r, "..")
		var err1, err2 error
		v.Min, err1 = strconv.ParseInt(lo, 10, 64)
		v.Max, err2 = strconv.ParseInt(hi, 10, 64)
		if !found || err1 != nil || err2 != nil || v.Min > v.Max {
			panic(fmt.Sprintf("declaration.%s: range tag %q is not min..max", f.Name, r))
		}
		v.Ranged = true
		v.Accepts = fmt.Sprintf("an integer in %d to %d", v.Min, v.Max)
	}
	if v.Name == "" || v.Help == "" || v.Accepts == "" {
		panic(fmt.Sprintf("declaration.%s: needs env, help, modes, and range or accepts tags", f.Name))
	}
	return v
}

// Variables are every variable some program of m reads, in the order of
// --help.
func Variables(m Mode) []Variable {
	var out []Variable
	for _, v := range variables {
		if v.Modes&m != 0 {
			out = append(out, v)
		}
	}
	return out
}

// declared is the variable called name.
func declared(name string) (Variable, bool) {
	for _, v := range variables {
		if v.Name == name {
			return v, true
		}
	}
	return Variable{}, false
}

// variable is the variable of the declaration's field.
func variable(field string) Variable {
	for _, v := range variables {
		if v.field == field {
			return v
		}
	}
	panic("the declaration has no field " + field)
}

// integer parses field's value against its range tag; the error names the
// variable and the range.
func (d *declaration) integer(field string) (int64, error) {
	v := variable(field)
	if !v.Ranged {
		panic("declaration." + field + " has no range tag")
	}
	raw := reflect.ValueOf(d).Elem().FieldByName(field).String()
	return parseRange(v.Name, raw, v.Min, v.Max)
}

// WriteFacadeHelp writes queen-kafka's --help text: what the program is,
// then every variable it reads with its default, what it accepts and what
// it means.
func WriteFacadeHelp(w io.Writer, prog string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s is a Kafka wire-protocol facade for Queen MQ. It takes no arguments besides\n--help and --version, and is configured by these environment variables:\n\n", prog)
	for _, v := range Variables(FacadeMode) {
		b.WriteString(helpLine(v))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteDevHelp writes queen-dev's -h text: its own variables, then
// embedded mode's (the facade's own variables reach the child, which
// validates them).
func WriteDevHelp(w io.Writer, prog string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: Queen-compatible development broker (not Queen).\n\nUsage: %s [-h | --version]\n\nConfiguration is by environment only:\n\n", prog, prog)
	for _, v := range Variables(DevMode) {
		b.WriteString(helpLine(v))
	}
	b.WriteString("\nEmbedded mode (read only when QUEEN_KAFKA_EMBEDDED=true, but for the switch itself):\n\n")
	for _, v := range Variables(EmbeddedMode) {
		if v.Modes&FacadeMode == 0 {
			b.WriteString(helpLine(v))
		}
	}
	b.WriteString(`
  The child gets this environment less the broker's secrets, QUEEN_URL set to the
  loopback of the bound listener unless QUEEN_URL is set, and needs
  QUEEN_KAFKA_ADVERTISED_ADDR. GET /status then carries a "kafka" block.
  queen-kafka --help lists the facade's own variables.

SIGTERM or SIGINT stops the embedded facade (if any), stops accepting, drains in-flight
requests, syncs the log and exits 0.
`)
	_, err := io.WriteString(w, b.String())
	return err
}

// helpLine is one variable's entry of --help: its name, then its default
// and what it accepts, then its meaning.
func helpLine(v Variable) string {
	def := "no default"
	if v.Default != "" {
		def = "default " + v.Default
	}
	return fmt.Sprintf("  %s\n      %s; %s\n      %s\n", v.Name, def, v.Accepts, v.Help)
}

// WriteTable writes every variable as docs/operations.md's Markdown table.
func WriteTable(w io.Writer) error {
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	var b strings.Builder
	b.WriteString("| Variable | Default | Accepts | Read by | Meaning |\n| --- | --- | --- | --- | --- |\n")
	for _, v := range Variables(AllModes) {
		def := "unset"
		if v.Default != "" {
			def = "`" + v.Default + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", v.Name, def, cell(v.Accepts), v.Modes, cell(v.Help))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
