package codegrid

// Grid holds the codes; Grid[i][j] is topic i's partition j.
type Grid [][]int16

// New sizes a grid for topics, width giving each topic's partition count.
func New[T any](topics []T, width func(T) int) Grid {
	g := make(Grid, len(topics))
	for i, t := range topics {
		g[i] = make([]int16, width(t))
	}
	return g
}

// Fill answers every partition not yet refused with code.
func (g Grid) Fill(code int16) {
	for i := range g {
		for j := range g[i] {
			if g[i][j] == 0 {
				g[i][j] = code
			}
		}
	}
}

// Len is how many partitions the grid holds.
func (g Grid) Len() int {
	n := 0
	for _, row := range g {
		n += len(row)
	}
	return n
}
