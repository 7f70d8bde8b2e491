package queen

import (
	"strings"
	"testing"
)

func TestEscUnesc(t *testing.T) {
	cases := map[string]string{
		"orders":     "orders",
		"a.b_c-D9":   "a.b_c-D9",
		"billing:eu": "billing%3Aeu",
		"100%":       "100%25",
		"sp ace":     "sp%20ace",
		"nul\x00":    "nul%00",
		"é":          "%C3%A9",
		"~/+":        "%7E%2F%2B",
		"":           "",
		"\xff":       "%FF",
	}
	for in, want := range cases {
		if got := Esc(in); got != want {
			t.Errorf("Esc(%q) = %q, want %q", in, got, want)
		}
		if back, ok := Unesc(want); !ok || back != in {
			t.Errorf("Unesc(%q) = %q, %v", want, back, ok)
		}
	}
	for _, bad := range []string{"%", "%4", "%G0", "a%2", "%%"} {
		if _, ok := Unesc(bad); ok {
			t.Errorf("Unesc(%q) accepted", bad)
		}
	}
	if got, ok := Unesc("%3a"); !ok || got != ":" {
		t.Errorf("lower-case hex: %q %v", got, ok)
	}
}

func TestGroupOffsetKeyRoundTrip(t *testing.T) {
	groups := []string{"billing", "g:with:colons", "100% sure", "", "ünï", "a/b\x00c"}
	topics := []string{"orders", "t.v_1-x"}
	for _, g := range groups {
		for _, tp := range topics {
			for _, p := range []int32{0, 7, 2147483647} {
				k := GroupOffsetKey(g, tp, p)
				if !strings.HasPrefix(k, GroupOffsetPrefix(g)) || strings.Count(k, ":") != 4 {
					t.Fatalf("%q: escaping must keep exactly the layout colons", k)
				}
				g2, t2, p2, ok := ParseGroupOffsetKey(k)
				if !ok || g2 != g || t2 != tp || p2 != p {
					t.Fatalf("ParseGroupOffsetKey(%q) = %q %q %d %v", k, g2, t2, p2, ok)
				}
			}
		}
	}
	for _, bad := range []string{"qk:groups:g:t:0", "qk:group:g:t", "qk:group:g:t:0:1", "qk:group:g:t:-1",
		"qk:group:g:t:x", "qk:group:g:t:+3", "qk:group:g:t:03", "qk:group:g%:t:0", "qk:group:g:t:2147483648", "qk:group:g:t:"} {
		if _, _, _, ok := ParseGroupOffsetKey(bad); ok {
			t.Errorf("ParseGroupOffsetKey(%q) accepted", bad)
		}
	}
}

func TestKeyFamilies(t *testing.T) {
	keys := map[string]string{
		GroupIndexKey("a:b"):               "qk:groups:a%3Ab",
		FenceKey("a b"):                    "qk:fence:a%20b",
		NodeKey("prod-1", 3):               "qk:node:prod-1:3",
		NodePrefix("prod-1"):               "qk:node:prod-1:",
		TxnKey("tx:1"):                     "qk:txn:tx%3A1",
		TopicCfgKey("orders"):              "qk:topiccfg:orders",
		GroupOffsetKey("g", "t", 3):        "qk:group:g:t:3",
		GroupOffsetPrefix("billing"):       "qk:group:billing:",
		ConsumerGroupMetaKey("a:b"):        "qk:cg:a%3Ab:g",
		ConsumerGroupMemberKey("g", "m/1"): "qk:cg:g:m:m%2F1",
		ProducerIDsKey:                     "qk:producerids",
		TxnStagePrefix("tx:1", 7, 2, 9):    "qk:txnstage:tx%3A1:7:2:9:",
		ShareStateKey("s g", "t", 4):       "qk:share:s%20g:t:4",
		ShareStatePrefix("s:g"):            "qk:share:s%3Ag:",
		GroupCfgKey("s:g"):                 "qk:groupcfg:s%3Ag",
	}
	for got, want := range keys {
		if got != want {
			t.Errorf("got %q want %q", got, want)
		}
	}
	fams := []string{PrefixGroup, PrefixGroups, PrefixFence, PrefixNode, PrefixTxn, PrefixTopicCfg, PrefixTxnStage, PrefixTxnPending, PrefixConsumerGroup, PrefixShare, PrefixShareGroup, PrefixGroupCfg, ProducerIDsKey}
	for i, a := range fams {
		for j, b := range fams {
			if i != j && strings.HasPrefix(a, b) {
				t.Errorf("families %q and %q are not prefix-free", a, b)
			}
		}
	}
}

func TestShareStateKeyRoundTrip(t *testing.T) {
	for _, g := range []string{"share", "g:with:colons", "100% sure", ""} {
		k := ShareStateKey(g, "orders", 9)
		if !strings.HasPrefix(k, ShareStatePrefix(g)) || strings.Count(k, ":") != 4 {
			t.Fatalf("%q: escaping must keep exactly the layout colons", k)
		}
		g2, t2, p2, ok := ParseShareStateKey(k)
		if !ok || g2 != g || t2 != "orders" || p2 != 9 {
			t.Fatalf("ParseShareStateKey(%q) = %q %q %d %v", k, g2, t2, p2, ok)
		}
	}
	for _, bad := range []string{"qk:group:g:t:0", "qk:share:g:t", "qk:share:g:t:-1", "qk:shares:g:t:0"} {
		if _, _, _, ok := ParseShareStateKey(bad); ok {
			t.Errorf("ParseShareStateKey(%q) accepted", bad)
		}
	}
}

func TestTxnPendingKeyRoundTrip(t *testing.T) {
	for _, c := range []struct {
		group, topic string
		partition    int32
	}{{"g", "t", 0}, {"a:b%c", "x.y", 17}, {"", "t", 2147483647}} {
		key := TxnPendingKey(c.group, c.topic, c.partition, "12.3.4")
		if !strings.HasPrefix(key, TxnPendingGroupPrefix(c.group)) {
			t.Fatalf("%q is not under its group's prefix", key)
		}
		g, tp, p, ok := ParseTxnPendingKey(key)
		if !ok || g != c.group || tp != c.topic || p != c.partition {
			t.Fatalf("%q parsed as %q %q %d %v", key, g, tp, p, ok)
		}
	}
	for _, bad := range []string{"qk:txnpend:", "qk:txnpend:g:t:x:1.2.3", "qk:group:g:t:0", "qk:txnpend:g:t:0"} {
		if _, _, _, ok := ParseTxnPendingKey(bad); ok {
			t.Fatalf("%q parsed", bad)
		}
	}
}
