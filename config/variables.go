package config

import (
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
)

// Variable is one environment variable of the facade as --help lists it,
// read from rawConfig's tags: the tags go-envconfig reads for the name and
// default, and the loader for an integer's range.
type Variable struct {
	Name    string
	Default string // "" when there is none
	Accepts string // "an integer in 1 to 64", or what else it takes
	Help    string // one line of meaning

	field    string
	Ranged   bool
	Min, Max int64
}

// variables is rawConfig's fields in order, parsed once.
var variables = func() []Variable {
	t := reflect.TypeFor[rawConfig]()
	out := make([]Variable, 0, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		out = append(out, parseVariable(t.Field(i)))
	}
	return out
}()

// parseVariable reads one field's tags; a tag the loader could not use is
// a programming error, found by every test that loads a configuration.
func parseVariable(f reflect.StructField) Variable {
	env, _ := f.Tag.Lookup("env")
	name, opts, _ := strings.Cut(env, ",")
	v := Variable{Name: strings.TrimSpace(name), Help: f.Tag.Get("help"), Accepts: f.Tag.Get("accepts"), Default: f.Tag.Get("default"), field: f.Name}
	for _, o := range strings.Split(opts, ",") {
		if d, ok := strings.CutPrefix(strings.TrimSpace(o), "default="); ok {
			v.Default = d
		}
	}
	if r, ok := f.Tag.Lookup("range"); ok {
		lo, hi, found := strings.Cut(r, "..")
		var err1, err2 error
		v.Min, err1 = strconv.ParseInt(lo, 10, 64)
		v.Max, err2 = strconv.ParseInt(hi, 10, 64)
		if !found || err1 != nil || err2 != nil || v.Min > v.Max {
			panic(fmt.Sprintf("rawConfig.%s: range tag %q is not min..max", f.Name, r))
		}
		v.Ranged = true
		v.Accepts = fmt.Sprintf("an integer in %d to %d", v.Min, v.Max)
	}
	if v.Name == "" || v.Help == "" || v.Accepts == "" {
		panic(fmt.Sprintf("rawConfig.%s: needs env, help, and range or accepts tags", f.Name))
	}
	return v
}

// Variables are every variable the facade reads, in the order of --help.
func Variables() []Variable { return append([]Variable(nil), variables...) }

// variable is the variable of rawConfig's field.
func variable(field string) Variable {
	for _, v := range variables {
		if v.field == field {
			return v
		}
	}
	panic("rawConfig has no field " + field)
}

// integer parses field's value against its range tag; the error names the
// variable and the range.
func (r *rawConfig) integer(field string) (int64, error) {
	v := variable(field)
	if !v.Ranged {
		panic("rawConfig." + field + " has no range tag")
	}
	raw := reflect.ValueOf(r).Elem().FieldByName(field).String()
	return parseRange(v.Name, raw, v.Min, v.Max)
}

// WriteHelp writes the --help text: what the program is, then every
// variable with its default, what it accepts and what it means.
func WriteHelp(w io.Writer, prog string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s is a Kafka wire-protocol facade for Queen MQ. It takes no arguments besides\n--help and --version, and is configured by these environment variables:\n\n", prog)
	for _, v := range variables {
		b.WriteString(helpLine(v))
	}
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
