package sharepartition

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// The durable form, one JSON value per share-partition:
//
//	{"v":1,"spso":<SPSO>,"m":[<member id>…],"r":[<range>…]}
//
// The ranges cover SPSO..SPEO in order, each a run of records alike:
// [<length>,<state>,<delivery count>] or, acquired,
// [<length>,1,<delivery count>,<index into m>,<lock deadline, unix ms>].
// Records acquired by one fetch share one range, so a window costs a few
// bytes per acquisition and acknowledgement batch, not per record.
const encodingVersion = 1

// maxDecodedRecords bounds what a row may make us allocate: the widest
// window Kafka allows, with room for gaps archived inside it.
const maxDecodedRecords = 4 * MaxMaxLocks

// Encode is p's durable form.
func (p *Partition) Encode() []byte {
	return p.AppendEncode(nil)
}

// AppendEncode appends p's durable form to b.
func (p *Partition) AppendEncode(b []byte) []byte {
	b = append(b, `{"v":1,"spso":`...)
	b = strconv.AppendInt(b, p.spso, 10)
	var members []string
	index := map[string]int{}
	last := ""
	for i := range p.recs {
		if r := &p.recs[i]; r.state == Acquired && r.member != last {
			last = r.member
			if _, ok := index[r.member]; !ok {
				index[r.member] = len(members)
				members = append(members, r.member)
			}
		}
	}
	if len(members) > 0 {
		b = append(b, `,"m":[`...)
		for i, m := range members {
			if i > 0 {
				b = append(b, ',')
			}
			mb, _ := json.Marshal(m) // a string always marshals
			b = append(b, mb...)
		}
		b = append(b, ']')
	}
	b = append(b, `,"r":[`...)
	for i := 0; i < len(p.recs); {
		j := i + 1
		for j < len(p.recs) && p.recs[j] == p.recs[i] {
			j++
		}
		if i > 0 {
			b = append(b, ',')
		}
		r := &p.recs[i]
		b = append(b, '[')
		b = strconv.AppendInt(b, int64(j-i), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(r.state), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(r.count), 10)
		if r.state == Acquired {
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(index[r.member]), 10) // once a range
			b = append(b, ',')
			b = strconv.AppendInt(b, r.deadline, 10)
		}
		b = append(b, ']')
		i = j
	}
	return append(b, "]}"...)
}

type wireState struct {
	V    int       `json:"v"`
	SPSO *int64    `json:"spso"`
	M    []string  `json:"m"`
	R    [][]int64 `json:"r"`
}

// errEncoding is a row this package cannot read.
var errEncoding = errors.New("share-partition state: malformed row")

// Decode reads a durable form written by Encode into a partition with
// cfg. A row it cannot read whole is an error, never a partial state.
func Decode(b []byte, cfg Config) (*Partition, error) {
	var w wireState
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("%w: %v", errEncoding, err)
	}
	if w.V != encodingVersion {
		return nil, fmt.Errorf("%w: version %d", errEncoding, w.V)
	}
	if w.SPSO == nil || *w.SPSO < 0 {
		return nil, fmt.Errorf("%w: no spso", errEncoding)
	}
	total := int64(0)
	for _, r := range w.R {
		if len(r) < 3 || r[0] < 1 || r[0] > maxDecodedRecords {
			return nil, fmt.Errorf("%w: range %v", errEncoding, r)
		}
		total += r[0]
		if total > maxDecodedRecords {
			return nil, fmt.Errorf("%w: more than %d records", errEncoding, maxDecodedRecords)
		}
	}
	if *w.SPSO > math.MaxInt64-total {
		return nil, fmt.Errorf("%w: offsets overflow", errEncoding)
	}
	p := New(cfg, *w.SPSO)
	p.recs = make([]record, 0, total)
	for _, r := range w.R {
		rec := record{state: RecordState(r[1])}
		if r[2] < 0 || r[2] > math.MaxInt16 {
			return nil, fmt.Errorf("%w: delivery count %d", errEncoding, r[2])
		}
		rec.count = int16(r[2])
		switch rec.state {
		case Available, Acknowledged, Archived:
			if len(r) != 3 {
				return nil, fmt.Errorf("%w: range %v", errEncoding, r)
			}
		case Acquired:
			if len(r) != 5 || r[3] < 0 || r[3] >= int64(len(w.M)) || w.M[r[3]] == "" {
				return nil, fmt.Errorf("%w: acquired range %v", errEncoding, r)
			}
			rec.member, rec.deadline = w.M[r[3]], r[4]
		default:
			return nil, fmt.Errorf("%w: state %d", errEncoding, r[1])
		}
		for range r[0] {
			p.recs = append(p.recs, rec)
		}
	}
	p.recompute()
	return p, nil
}

// Equal reports whether a and b hold the same durable state.
func Equal(a, b *Partition) bool {
	if a.spso != b.spso || len(a.recs) != len(b.recs) {
		return false
	}
	for i := range a.recs {
		if a.recs[i] != b.recs[i] {
			return false
		}
	}
	return true
}
