package ownership

import (
	"errors"
	"testing"
)

type fixed struct {
	owner Broker
	err   error
}

func (f fixed) Owner(string) (Broker, error)   { return f.owner, f.err }
func (f fixed) Redirect(string) (Broker, bool) { return Broker{}, false }
func (f fixed) Self() Broker                   { return Broker{NodeID: 1} }

func TestMine(t *testing.T) {
	for _, c := range []struct {
		o    Owners
		mine bool
		err  bool
	}{
		{Single{Node: Broker{NodeID: 3}}, true, false},
		{fixed{owner: Broker{NodeID: 1}}, true, false},
		{fixed{owner: Broker{NodeID: 2}}, false, false},
		{fixed{err: ErrNoOwner}, false, true},
	} {
		mine, err := Mine(c.o, "g")
		if mine != c.mine || (err != nil) != c.err || (err != nil && !errors.Is(err, ErrNoOwner)) {
			t.Errorf("%+v: Mine = %v, %v", c.o, mine, err)
		}
	}
}
