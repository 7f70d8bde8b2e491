package sharesession

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func p(id byte, n int32) Partition { return Partition{TopicID: [16]byte{id}, Partition: n} }

func TestEpochs(t *testing.T) {
	c := New(2)
	k := Key{"g", "m"}
	if _, code := c.Fetch(k, 1, 1, nil, nil, false); code != kerr.ShareSessionNotFound.Code {
		t.Fatalf("epoch 1 without a session: %d", code)
	}
	if _, code := c.Fetch(k, 1, 0, []Partition{p(1, 0)}, nil, true); code != kerr.InvalidRequest.Code {
		t.Fatalf("epoch 0 with acknowledgements: %d", code)
	}
	got, code := c.Fetch(k, 1, 0, []Partition{p(1, 0), p(1, 1), p(1, 0)}, nil, false)
	if code != 0 || !slices.Equal(got, []Partition{p(1, 0), p(1, 1)}) {
		t.Fatalf("open: %v %d", got, code)
	}
	if _, code := c.Fetch(k, 1, 2, nil, nil, false); code != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("epoch 2 expecting 1: %d", code)
	}
	got, code = c.Fetch(k, 1, 1, []Partition{p(2, 0)}, []Partition{p(1, 0)}, true)
	if code != 0 || !slices.Equal(got, []Partition{p(1, 1), p(2, 0)}) {
		t.Fatalf("incremental: %v %d", got, code)
	}
	if code := c.Acknowledge(k, 0); code != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("ShareAcknowledge at epoch 0: %d", code)
	}
	if code := c.Acknowledge(k, 3); code != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("ShareAcknowledge at 3 expecting 2: %d", code)
	}
	if code := c.Acknowledge(k, 2); code != 0 {
		t.Fatalf("ShareAcknowledge at 2: %d", code)
	}
	if e, _ := c.Epoch(k); e != 3 {
		t.Fatalf("epoch after acknowledge: %d", e)
	}
	if _, code := c.Fetch(k, 1, FinalEpoch, []Partition{p(1, 1)}, nil, true); code != 0 {
		t.Fatalf("final fetch: %d", code)
	}
	if parts := c.Close(k); !slices.Equal(parts, []Partition{p(1, 1), p(2, 0)}) {
		t.Fatalf("close: %v", parts)
	}
	if _, code := c.Fetch(k, 1, FinalEpoch, nil, nil, false); code != kerr.ShareSessionNotFound.Code {
		t.Fatalf("final without a session: %d", code)
	}
	if NextEpoch(1<<31-1) != 1 || NextEpoch(-1) != -1 {
		t.Fatal("NextEpoch wraps to 1 and stays final")
	}
}

func TestLimitAndDisconnect(t *testing.T) {
	c := New(2)
	for i, m := range []string{"a", "b"} {
		if _, code := c.Fetch(Key{"g", m}, uint64(i), 0, []Partition{p(1, 0)}, nil, false); code != 0 {
			t.Fatal(code)
		}
	}
	if _, code := c.Fetch(Key{"g", "c"}, 9, 0, nil, nil, false); code != kerr.ShareSessionLimitReached.Code {
		t.Fatalf("past the bound: %d", code)
	}
	// Reopening a member's own session is not a new one.
	if _, code := c.Fetch(Key{"g", "a"}, 0, 0, nil, nil, false); code != 0 {
		t.Fatalf("reopen at the bound: %d", code)
	}
	ended := c.Disconnected(1)
	if len(ended) != 1 || ended[0].Key != (Key{"g", "b"}) || !slices.Equal(ended[0].Partitions, []Partition{p(1, 0)}) {
		t.Fatalf("disconnect: %+v", ended)
	}
	if _, code := c.Fetch(Key{"g", "c"}, 9, 0, nil, nil, false); code != 0 {
		t.Fatalf("after eviction: %d", code)
	}
	if st := c.Stats(); st.Sessions != 2 || st.Evictions != 1 || st.Partitions != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// model is the session table the way the KIP describes it.
type model struct {
	epoch int32
	conn  uint64
	parts []Partition
}

// TestProperty runs random requests from a few members over few
// connections against a plain model: every answer, every session's
// partitions and epochs, the bound and the counters agree.
func TestProperty(t *testing.T) {
	for seed := uint64(0); seed < 200; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		const max = 3
		c := New(max)
		m := map[Key]*model{}
		keys := []Key{{"g", "a"}, {"g", "b"}, {"h", "a"}, {"h", "c"}, {"g", "d"}}
		randParts := func() []Partition {
			var ps []Partition
			for range r.IntN(3) {
				ps = append(ps, p(byte(r.IntN(2)), int32(r.IntN(3))))
			}
			return ps
		}
		for step := range 300 {
			k := keys[r.IntN(len(keys))]
			conn := uint64(r.IntN(3))
			mk := m[k]
			epoch := int32(r.IntN(4)) - 1
			if mk != nil && r.IntN(2) == 0 {
				epoch = mk.epoch
			}
			switch op := r.IntN(10); {
			case op < 6:
				add, forget, acks := randParts(), randParts(), r.IntN(3) == 0
				got, code := c.Fetch(k, conn, epoch, add, forget, acks)
				want, wcode := []Partition(nil), int16(0)
				switch {
				case epoch == FinalEpoch && mk == nil:
					wcode = kerr.ShareSessionNotFound.Code
				case epoch == FinalEpoch:
				case epoch == InitialEpoch && acks:
					wcode = kerr.InvalidRequest.Code
				case epoch == InitialEpoch && mk == nil && len(m) >= max:
					wcode = kerr.ShareSessionLimitReached.Code
				case epoch == InitialEpoch:
					mk = &model{epoch: 1, conn: conn}
					for _, a := range add {
						if !slices.Contains(mk.parts, a) {
							mk.parts = append(mk.parts, a)
						}
					}
					m[k] = mk
					want = mk.parts
				case mk == nil:
					wcode = kerr.ShareSessionNotFound.Code
				case epoch != mk.epoch:
					wcode = kerr.InvalidShareSessionEpoch.Code
				default:
					for _, a := range add {
						if !slices.Contains(mk.parts, a) {
							mk.parts = append(mk.parts, a)
						}
					}
					mk.parts = slices.DeleteFunc(mk.parts, func(q Partition) bool { return slices.Contains(forget, q) })
					mk.epoch, mk.conn = NextEpoch(mk.epoch), conn
					want = mk.parts
				}
				if code != wcode || !slices.Equal(got, want) {
					t.Fatalf("seed %d step %d: Fetch(%v, %d) = %v %d, want %v %d", seed, step, k, epoch, got, code, want, wcode)
				}
			case op < 8:
				code := c.Acknowledge(k, epoch)
				wcode := int16(0)
				switch {
				case epoch == InitialEpoch:
					wcode = kerr.InvalidShareSessionEpoch.Code
				case mk == nil:
					wcode = kerr.ShareSessionNotFound.Code
				case epoch == FinalEpoch:
				case epoch != mk.epoch:
					wcode = kerr.InvalidShareSessionEpoch.Code
				default:
					mk.epoch = NextEpoch(mk.epoch)
				}
				if code != wcode {
					t.Fatalf("seed %d step %d: Acknowledge(%v, %d) = %d, want %d", seed, step, k, epoch, code, wcode)
				}
			case op < 9:
				got := c.Close(k)
				var want []Partition
				if mk != nil {
					want = mk.parts
					delete(m, k)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("seed %d step %d: Close = %v, want %v", seed, step, got, want)
				}
			default:
				ended := c.Disconnected(conn)
				var want []Key
				for mk2, s := range m {
					if s.conn == conn {
						want = append(want, mk2)
					}
				}
				if len(ended) != len(want) {
					t.Fatalf("seed %d step %d: Disconnected(%d) = %v, want %v", seed, step, conn, ended, want)
				}
				for _, e := range ended {
					if s := m[e.Key]; s == nil || s.conn != conn || !slices.Equal(s.parts, e.Partitions) {
						t.Fatalf("seed %d step %d: Disconnected ended %+v", seed, step, e)
					}
					delete(m, e.Key)
				}
			}
			parts := 0
			for k2, s := range m {
				parts += len(s.parts)
				if e, ok := c.Epoch(k2); !ok || e != s.epoch {
					t.Fatalf("seed %d step %d: epoch of %v = %d %v, want %d", seed, step, k2, e, ok, s.epoch)
				}
			}
			if st := c.Stats(); st.Sessions != len(m) || st.Partitions != parts || st.Sessions > max {
				t.Fatalf("seed %d step %d: stats %+v, model %d sessions %d partitions", seed, step, st, len(m), parts)
			}
		}
	}
}
