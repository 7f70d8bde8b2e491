package e2e

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestFacadeKill9Resume: a facade restart is a broker restart. A group
// member keeps running across a kill -9 of the facade and its restart on
// the same address; the committed offsets survive (they are Queen's), the
// member rejoins on its own, and it reads exactly what was produced after
// the restart: nothing lost, nothing re-delivered (it had committed all it
// read). The records themselves survive too.
func TestFacadeKill9Resume(t *testing.T) {
	t.Parallel()
	dev, _ := sharedEnv(t)
	fac := startFacade(t, dev, nil)
	tg := target{name: "restart", bootstrap: []string{fac.addr}, dev: dev}
	const parts = 3
	topic, group := uniq("kill9"), uniq("g-kill9")
	createTopic(t, tg, topic, parts, nil)
	r1 := produceRound(t, tg, topic, parts, 4, "r1", 0)
	m := startMember(t, tg, "m", group, topic, memberOpts{extra: []kgo.Opt{kgo.RetryTimeout(60 * time.Second)}})
	exactlyOnce(t, "before kill -9", r1, collect(t, len(r1), 20*time.Second, m))
	assertCommitted(t, tg, group, topic, fill(parts, 4))

	fac.kill()
	if err := fac.restart(); err != nil {
		t.Fatalf("restart facade: %v", err)
	}
	assertCommitted(t, tg, group, topic, fill(parts, 4))
	waitStable(t, tg, group, topic, 1, parts)
	r2 := produceRound(t, tg, topic, parts, 3, "r2", 4)
	got := collect(t, len(r1)+len(r2), 30*time.Second, m)
	exactlyOnce(t, "across kill -9", append(append([]rec{}, r1...), r2...), got)
	assertCommitted(t, tg, group, topic, fill(parts, 7))
	assertRecords(t, "records after restart", append(append([]rec{}, r1...), r2...), consumeKgo(t, tg.bootstrap, topic, parts, len(r1)+len(r2)), recOpts{})
}
