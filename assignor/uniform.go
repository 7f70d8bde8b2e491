package assignor

import (
	"cmp"
	"container/heap"
	"slices"
)

// maxBalancePasses bounds the heterogeneous balancing loop, as Kafka's
// UniformHeterogeneousAssignmentBuilder does (MAX_ITERATION_COUNT = 16): most
// subscription patterns converge in one pass and need a second to see it;
// overlapping, non-identical subscriptions can take longer, and a nearly
// balanced assignment now beats a perfect one late.
const maxBalancePasses = 16

type uniform struct{}

func (uniform) Name() string { return "uniform" }

func (uniform) Assign(s Spec) Assignment {
	a, _ := assignUniform(s)
	return a
}

// assignUniform also reports whether the heterogeneous balancing converged
// (always true for a homogeneous group), for the tests' balance invariant.
func assignUniform(s Spec) (Assignment, bool) {
	g := newGroup(s)
	own := g.owners()
	if len(g.members) == 0 || len(g.topics) == 0 {
		return g.assignment(own), true
	}
	if g.homogeneous() {
		uniformHomogeneous(g, own)
		return g.assignment(own), true
	}
	converged := uniformHeterogeneous(g, own)
	return g.assignment(own), converged
}

// uniformHomogeneous is Kafka's UniformHomogeneousAssignmentBuilder: every
// member subscribes to the same topics, so every member's count is
// floor(P/N) or that plus one, and a member keeps as many of its partitions
// as that quota allows. Kafka hands the plus-one quotas to the first members
// in its iteration order; here they go to the members that keep the most
// (ties by id), which never moves more partitions than Kafka's choice and,
// when a member joins or leaves, moves only what must move.
func uniformHomogeneous(g *group, own [][]int) {
	n := len(g.members)
	kept := make([]int, n)
	total := 0
	for _, o := range own {
		total += len(o)
		for _, mi := range o {
			if mi >= 0 {
				kept[mi]++
			}
		}
	}
	quota := make([]int, n)
	order := make([]int, n)
	for mi := range order {
		order[mi] = mi
		quota[mi] = total / n
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := cmp.Compare(kept[b], kept[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	for _, mi := range order[:total%n] {
		quota[mi]++
	}

	// Revoke what exceeds a quota, keeping a member's lowest partitions
	// (topics by name), and gather everything unowned in the same order.
	used := make([]int, n)
	free := make([][2]int, 0, total) // topic index, partition
	for ti, o := range own {
		for p, mi := range o {
			if mi >= 0 && used[mi] < quota[mi] {
				used[mi]++
				continue
			}
			o[p] = -1
			free = append(free, [2]int{ti, p})
		}
	}
	// Fill the members below quota in id order, each with a contiguous run.
	next := 0
	for mi := range n {
		for ; used[mi] < quota[mi]; used[mi]++ {
			f := free[next]
			next++
			own[f[0]][f[1]] = mi
		}
	}
}

// uniformHeterogeneous is Kafka 4's UniformHeterogeneousAssignmentBuilder:
// members keep every partition they own of a topic they still subscribe to;
// the unowned partitions go, topic by topic, to the least loaded subscriber;
// then partitions move from the most loaded to the least loaded subscriber
// of each topic until no topic's subscribers differ by more than one, or the
// pass limit. It returns whether balancing converged.
func uniformHeterogeneous(g *group, own [][]int) bool {
	n := len(g.members)
	load := make([]int, n)
	for _, o := range own {
		for _, mi := range o {
			if mi >= 0 {
				load[mi]++
			}
		}
	}
	// Kafka's topic order: most partitions per subscriber first (the hardest
	// to balance), then fewer subscribers, then name.
	order := make([]int, len(g.topics))
	for ti := range order {
		order[ti] = ti
	}
	slices.SortFunc(order, func(a, b int) int {
		// counts[a]/subs[a] > counts[b]/subs[b], in integers.
		pa := int64(g.counts[a]) * int64(len(g.subscribers[b]))
		pb := int64(g.counts[b]) * int64(len(g.subscribers[a]))
		if c := cmp.Compare(pb, pa); c != 0 {
			return c
		}
		if c := cmp.Compare(len(g.subscribers[a]), len(g.subscribers[b])); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})

	b := newBalancer(load)
	for _, ti := range order {
		b.least.reset(g.subscribers[ti])
		for p, mi := range own[ti] {
			if mi >= 0 {
				continue
			}
			r := b.least.top()
			own[ti][p] = r
			load[r]++
			b.least.fix(r)
		}
	}

	for range maxBalancePasses {
		moved := 0
		for _, ti := range order {
			if len(g.subscribers[ti]) >= 2 {
				moved += b.balanceTopic(g.subscribers[ti], own[ti])
			}
		}
		if moved == 0 {
			return true
		}
	}
	return false
}

// balancer holds the scratch space of the heterogeneous balancing, reused
// across topics and passes.
type balancer struct {
	load   []int
	least  *memberHeap // a topic's subscribers, least loaded first, then lowest index
	most   *memberHeap // a topic's subscribers holding its partitions, most loaded first, then highest index
	held   [][]int32   // per member: the topic's partitions it holds, ascending (the last moves first)
	heldOf []int       // members with a non-nil held entry, to clear
}

func newBalancer(load []int) *balancer {
	b := &balancer{load: load, held: make([][]int32, len(load))}
	b.least = newMemberHeap(len(load), func(x, y int) bool {
		if load[x] != load[y] {
			return load[x] < load[y]
		}
		return x < y
	})
	b.most = newMemberHeap(len(load), func(x, y int) bool {
		if load[x] != load[y] {
			return load[x] > load[y]
		}
		return x > y
	})
	return b
}

// balanceTopic moves a topic's partitions from its most loaded subscriber
// holding one to its least loaded subscriber while their counts (over every
// topic) differ by more than one. Each move lowers the sum of squared
// counts, so it ends. It returns the number of partitions moved.
func (b *balancer) balanceTopic(subscribers []int, owners []int) int {
	lo, hi := -1, -1
	for _, mi := range subscribers {
		if lo < 0 || b.load[mi] < lo {
			lo = b.load[mi]
		}
	}
	for _, mi := range owners {
		if b.load[mi] > hi {
			hi = b.load[mi]
		}
	}
	if hi-lo <= 1 {
		return 0
	}
	for _, mi := range b.heldOf {
		b.held[mi] = b.held[mi][:0]
	}
	b.heldOf = b.heldOf[:0]
	for p, mi := range owners {
		if len(b.held[mi]) == 0 {
			b.heldOf = append(b.heldOf, mi)
		}
		b.held[mi] = append(b.held[mi], int32(p))
	}
	b.least.reset(subscribers)
	b.most.reset(b.heldOf)

	moved := 0
	for b.most.len() > 0 {
		d := b.most.top()
		if len(b.held[d]) == 0 {
			b.most.pop()
			continue
		}
		r := b.least.top()
		if b.load[d]-b.load[r] <= 1 {
			break
		}
		p := b.held[d][len(b.held[d])-1]
		b.held[d] = b.held[d][:len(b.held[d])-1]
		owners[p] = r
		if len(b.held[r]) == 0 {
			b.heldOf = append(b.heldOf, r)
		}
		b.held[r] = append(b.held[r], p)
		b.load[d]--
		b.load[r]++
		moved++
		b.least.fix(d)
		b.least.fix(r)
		b.most.fix(d)
		if !b.most.has(r) {
			b.most.push(r)
		} else {
			b.most.fix(r)
		}
	}
	return moved
}

// memberHeap is a binary heap of member indices under an order that reads
// the members' loads, with each member's position kept so that a load change
// is one fix.
type memberHeap struct {
	items []int
	pos   []int // per member: index in items, or -1
	less  func(x, y int) bool
}

func newMemberHeap(members int, less func(x, y int) bool) *memberHeap {
	h := &memberHeap{pos: make([]int, members), less: less}
	for i := range h.pos {
		h.pos[i] = -1
	}
	return h
}

func (h *memberHeap) reset(members []int) {
	for _, mi := range h.items {
		h.pos[mi] = -1
	}
	h.items = append(h.items[:0], members...)
	for i, mi := range h.items {
		h.pos[mi] = i
	}
	heap.Init(h)
}

func (h *memberHeap) top() int        { return h.items[0] }
func (h *memberHeap) has(mi int) bool { return h.pos[mi] >= 0 }
func (h *memberHeap) push(mi int)     { heap.Push(h, mi) }
func (h *memberHeap) pop()            { heap.Pop(h) }

func (h *memberHeap) fix(mi int) {
	if i := h.pos[mi]; i >= 0 {
		heap.Fix(h, i)
	}
}

// heap.Interface; the methods above are what the balancer calls.

func (h *memberHeap) Len() int           { return len(h.items) }
func (h *memberHeap) len() int           { return len(h.items) }
func (h *memberHeap) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }
func (h *memberHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.pos[h.items[i]] = i
	h.pos[h.items[j]] = j
}
func (h *memberHeap) Push(x any) {
	mi := x.(int)
	h.pos[mi] = len(h.items)
	h.items = append(h.items, mi)
}
func (h *memberHeap) Pop() any {
	mi := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	h.pos[mi] = -1
	return mi
}
