package jsontext

// SkipValue passes the one JSON value that starts at b[i] (no white space
// before it) and returns the index just past it. ok is false when the text
// there is not a JSON value, or nests deeper than depth arrays and objects
// (the caller's bound on recursion): the caller then leaves the text to
// encoding/json. It accepts what encoding/json accepts, strings by
// ScanString's rule (invalid UTF-8 passes).
func SkipValue(b []byte, i, depth int) (end int, ok bool) {
	if i >= len(b) || depth < 0 {
		return i, false
	}
	switch c := b[i]; {
	case c == '"':
		end, _, bad := ScanString(b, i)
		return end, bad == ""
	case c == '{' || c == '[':
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		i = SkipSpace(b, i+1)
		if i < len(b) && b[i] == closing {
			return i + 1, true
		}
		for {
			if c == '{' {
				if i >= len(b) || b[i] != '"' {
					return i, false
				}
				end, _, bad := ScanString(b, i)
				if bad != "" {
					return end, false
				}
				i = SkipSpace(b, end)
				if i >= len(b) || b[i] != ':' {
					return i, false
				}
				i = SkipSpace(b, i+1)
			}
			if i, ok = SkipValue(b, i, depth-1); !ok {
				return i, false
			}
			i = SkipSpace(b, i)
			switch {
			case i >= len(b):
				return i, false
			case b[i] == closing:
				return i + 1, true
			case b[i] != ',':
				return i, false
			}
			i = SkipSpace(b, i+1)
		}
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		return number(b, i)
	}
	return i, false
}

func literal(b []byte, i int, w string) (int, bool) {
	if len(b)-i >= len(w) && string(b[i:i+len(w)]) == w {
		return i + len(w), true
	}
	return i, false
}

// number passes -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func number(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return j, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}
