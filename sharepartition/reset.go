package sharepartition

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ResetKind is share.auto.offset.reset's strategy.
type ResetKind uint8

const (
	ResetLatest ResetKind = iota // Kafka's default
	ResetEarliest
	ResetByDuration
)

// Reset is a parsed share.auto.offset.reset.
type Reset struct {
	Kind     ResetKind
	Duration time.Duration // ResetByDuration only
}

// ParseReset reads share.auto.offset.reset: "latest", "earliest" or
// "by_duration:<ISO-8601 duration>" (PnDTnHnMn.nS, not negative).
func ParseReset(s string) (Reset, error) {
	switch s {
	case "latest":
		return Reset{Kind: ResetLatest}, nil
	case "earliest":
		return Reset{Kind: ResetEarliest}, nil
	}
	if rest, ok := strings.CutPrefix(s, "by_duration:"); ok {
		d, err := parseISODuration(rest)
		if err != nil {
			return Reset{}, fmt.Errorf("share.auto.offset.reset %q: %w", s, err)
		}
		return Reset{Kind: ResetByDuration, Duration: d}, nil
	}
	return Reset{}, fmt.Errorf("share.auto.offset.reset %q: must be latest, earliest or by_duration:<duration>", s)
}

// parseISODuration reads the subset of ISO 8601 Java's Duration.parse
// takes: P[nD][T[nH][nM][n[.n]S]], case-insensitive, no sign.
func parseISODuration(s string) (time.Duration, error) {
	u := strings.ToUpper(s)
	if !strings.HasPrefix(u, "P") || len(u) < 3 {
		return 0, fmt.Errorf("duration %q is not PnDTnHnMn.nS", s)
	}
	datePart, timePart, hasT := strings.Cut(u[1:], "T")
	if hasT && timePart == "" {
		return 0, fmt.Errorf("duration %q has an empty time part", s)
	}
	total := 0.0
	take := func(part string, units map[byte]float64, order string) error {
		for part != "" {
			i := 0
			for i < len(part) && (part[i] >= '0' && part[i] <= '9' || part[i] == '.') {
				i++
			}
			if i == 0 || i == len(part) {
				return fmt.Errorf("duration %q is not PnDTnHnMn.nS", s)
			}
			unit := part[i]
			pos := strings.IndexByte(order, unit)
			if pos < 0 {
				return fmt.Errorf("duration %q: unit %c", s, unit)
			}
			order = order[pos+1:] // each unit once, in order
			num := part[:i]
			if strings.Contains(num, ".") && unit != 'S' {
				return fmt.Errorf("duration %q: only seconds may have a fraction", s)
			}
			v, err := strconv.ParseFloat(num, 64)
			if err != nil {
				return fmt.Errorf("duration %q: %v", s, err)
			}
			total += v * units[unit]
			part = part[i+1:]
		}
		return nil
	}
	if err := take(datePart, map[byte]float64{'D': 86400}, "D"); err != nil {
		return 0, err
	}
	if err := take(timePart, map[byte]float64{'H': 3600, 'M': 60, 'S': 1}, "HMS"); err != nil {
		return 0, err
	}
	if total*1e9 > math.MaxInt64 {
		return 0, fmt.Errorf("duration %q is too long", s)
	}
	return time.Duration(total * 1e9), nil
}

// Log is what initialization reads of the partition's log.
type Log interface {
	StartOffset(ctx context.Context) (int64, error)
	EndOffset(ctx context.Context) (int64, error) // the high watermark
	// OffsetForTime is the first offset whose timestamp is at or after
	// ms; found is false when no record is that recent.
	OffsetForTime(ctx context.Context, ms int64) (offset int64, found bool, err error)
}

// ResetInitializer applies r to log, as Kafka initializes a share-partition
// with no state: latest is the log end, earliest the log start, by_duration
// the first record at or after now minus the duration (the log end when
// none is).
func ResetInitializer(r Reset, log Log, now func() time.Time) Initializer {
	return func(ctx context.Context) (int64, error) {
		switch r.Kind {
		case ResetEarliest:
			return log.StartOffset(ctx)
		case ResetByDuration:
			off, found, err := log.OffsetForTime(ctx, now().Add(-r.Duration).UnixMilli())
			if err != nil || found {
				return off, err
			}
		}
		return log.EndOffset(ctx)
	}
}
