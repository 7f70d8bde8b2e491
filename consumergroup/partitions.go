package consumergroup

import (
	"encoding/hex"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// topicID is a topic's KIP-516 id, as assignments name topics.
type topicID = [16]byte

// parts is a set of partitions by topic id, each list ascending without
// duplicates; a topic with no partitions is absent.
type parts map[topicID][]int32

func (p parts) has(t topicID, n int32) bool {
	_, ok := slices.BinarySearch(p[t], n)
	return ok
}

func (p parts) equal(o parts) bool { return maps.EqualFunc(p, o, slices.Equal[[]int32]) }

// add puts n into p's list for t, keeping it sorted.
func (p parts) add(t topicID, n int32) {
	ps := p[t]
	i, ok := slices.BinarySearch(ps, n)
	if !ok {
		p[t] = slices.Insert(ps, i, n)
	}
}

// each calls f for every partition, topics in id order.
func (p parts) each(f func(t topicID, n int32)) {
	for _, t := range p.topics() {
		for _, n := range p[t] {
			f(t, n)
		}
	}
}

func (p parts) topics() []topicID {
	ts := make([]topicID, 0, len(p))
	for t := range p {
		ts = append(ts, t)
	}
	slices.SortFunc(ts, func(a, b topicID) int { return strings.Compare(string(a[:]), string(b[:])) })
	return ts
}

// partsOf normalises a request's or a store's lists: sorted, deduplicated,
// negatives dropped, empty topics absent.
func partsOf(m map[topicID][]int32) parts {
	out := make(parts, len(m))
	for t, ps := range m {
		ps = slices.Clone(ps)
		slices.Sort(ps)
		ps = slices.Compact(ps)
		for len(ps) > 0 && ps[0] < 0 {
			ps = ps[1:]
		}
		if len(ps) > 0 {
			out[t] = ps
		}
	}
	return out
}

// encodeParts is the store's compact form: topic id in hex → ranges,
// "0-5,7,9-11".
func encodeParts(p parts) map[string]string {
	if len(p) == 0 {
		return nil
	}
	out := make(map[string]string, len(p))
	for t, ps := range p {
		var b strings.Builder
		for i := 0; i < len(ps); {
			j := i
			for j+1 < len(ps) && ps[j+1] == ps[j]+1 {
				j++
			}
			if b.Len() > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(int(ps[i])))
			if j > i {
				b.WriteByte('-')
				b.WriteString(strconv.Itoa(int(ps[j])))
			}
			i = j + 1
		}
		out[hex.EncodeToString(t[:])] = b.String()
	}
	return out
}

// decodeParts reverses encodeParts; ok is false for anything it did not write.
func decodeParts(m map[string]string) (parts, bool) {
	out := make(parts, len(m))
	for k, v := range m {
		raw, err := hex.DecodeString(k)
		if err != nil || len(raw) != 16 {
			return nil, false
		}
		var ps []int32
		for _, r := range strings.Split(v, ",") {
			lo, hi, isRange := strings.Cut(r, "-")
			a, err := strconv.ParseInt(lo, 10, 32)
			if err != nil || a < 0 {
				return nil, false
			}
			b := a
			if isRange {
				if b, err = strconv.ParseInt(hi, 10, 32); err != nil || b < a {
					return nil, false
				}
			}
			for n := a; n <= b; n++ {
				ps = append(ps, int32(n))
			}
		}
		out[topicID(raw)] = ps
	}
	return partsOf(out), true
}
