package queen

import "time"

// ParseTS parses a fetch record's ts (§0: UTC, microseconds); a zero time
// when it does not parse.
func ParseTS(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// FormatTS renders t in the §0 record-time format.
func FormatTS(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000000Z")
}
