package fetchsession

// Slots numbers the partitions of one set (a session's, or a sessionless
// client's in the node's watch) densely, so per-partition state can live
// in slices indexed by slot instead of maps keyed by topic name. A freed
// slot goes to the next partition to arrive with a new generation
// (Partition.SlotGen), so state kept under the old generation is seen to
// be another partition's rather than taken for the newcomer's.
type Slots struct {
	free []int32  // released slots, the last released given first
	gens []uint32 // by slot, the generation it was last given with
}

// Take gives a slot and its generation. A slot not given before is Len()-1
// after the call, so callers can grow their slices to Len().
func (s *Slots) Take() (slot int32, gen uint32) {
	if n := len(s.free); n > 0 {
		slot, s.free = s.free[n-1], s.free[:n-1]
	} else {
		slot = int32(len(s.gens))
		s.gens = append(s.gens, 0)
	}
	s.gens[slot]++
	return slot, s.gens[slot]
}

// Release frees a slot taken before, for the next Take.
func (s *Slots) Release(slot int32) { s.free = append(s.free, slot) }

// Gen is the generation a slot was last given with.
func (s *Slots) Gen(slot int32) uint32 { return s.gens[slot] }

// Len is how many slots were ever given: one past the highest.
func (s *Slots) Len() int { return len(s.gens) }
