package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/queen-mq/queen-kafka/transport"
)

// topicVerdicts is what one data-path request (Produce, Fetch, ListOffsets)
// has learned of the topics it names: each topic is checked once however
// many times it is named, and the throttle a check carried raises the
// response's throttle_time_ms once. It reads the catalogues alone; c is
// only the request's connection, whose identity and credential pick and
// read its catalogue.
type topicVerdicts struct {
	cats     *catalogs
	c        *transport.Conn
	fault    queenFault
	throttle *int32 // the response's throttle_time_ms
	seen     map[string]topicVerdict
	byID     map[[16]byte]idVerdict // topics named by id (ofID)
}

// idVerdict is what a request learned of a topic id: the name it resolved
// to ("" when it did not) and the verdict.
type idVerdict struct {
	name string
	tv   topicVerdict
}

func (n *Node) topicVerdicts(c *transport.Conn, fault queenFault, throttle *int32) *topicVerdicts {
	return &topicVerdicts{cats: n.cats, c: c, fault: fault, throttle: throttle, seen: make(map[string]topicVerdict)}
}

// of returns topic's verdict, checking it with dataTopic the first time. An
// error (a canceled call) closes the connection.
func (v *topicVerdicts) of(ctx context.Context, topic string) (topicVerdict, error) {
	if tv, ok := v.seen[topic]; ok {
		return tv, nil
	}
	tv, err := v.cats.dataTopic(ctx, v.c, topic, v.fault)
	if err != nil {
		return tv, err
	}
	*v.throttle = max(*v.throttle, tv.throttle)
	v.seen[topic] = tv
	return tv, nil
}

// ofID is of for a topic named by id (Produce v13, Fetch v13+): the topic's
// name and verdict. An id no addressable topic has is refused
// UNKNOWN_TOPIC_ID with name "" (Kafka's answer); a failed catalogue read
// is mapped by fault as for a name. Each id is checked once per request.
func (v *topicVerdicts) ofID(ctx context.Context, id [16]byte) (string, topicVerdict, error) {
	if iv, ok := v.byID[id]; ok {
		return iv.name, iv.tv, nil
	}
	var iv idVerdict
	name, width, ok, err := v.cats.topicByID(ctx, v.c, id)
	switch {
	case err != nil:
		code, throttle, msg, fatal := v.fault(err)
		if fatal != nil {
			return "", topicVerdict{}, fatal
		}
		iv.tv = topicVerdict{code: code, throttle: throttle, msg: msg, failed: true}
	case !ok:
		iv.tv = topicVerdict{code: kerr.UnknownTopicID.Code, msg: unknownTopicIDMsg}
	default:
		iv = idVerdict{name: name, tv: v.cats.servedTopic(v.c, name, width)}
		if prev, ok := v.seen[name]; ok {
			iv.tv = prev
		} else {
			v.seen[name] = iv.tv
		}
	}
	*v.throttle = max(*v.throttle, iv.tv.throttle)
	if v.byID == nil {
		v.byID = make(map[[16]byte]idVerdict)
	}
	v.byID[id] = iv
	return iv.name, iv.tv, nil
}

const unknownTopicIDMsg = "This server does not host this topic ID."

// hasPartition reports whether partition p of a topic whose verdict is tv
// exists (see knownPartition, which may raise tv.width).
func (v *topicVerdicts) hasPartition(ctx context.Context, topic string, tv *topicVerdict, p int32) bool {
	return p >= 0 && v.cats.knownPartition(ctx, v.c, topic, tv, p)
}

// refusal is the code a read (Fetch, ListOffsets) of partition p of a topic
// whose verdict is tv is refused with, and whether it is refused: the
// topic's own code when the topic was refused or could not be checked (0
// under a bare throttle), UNKNOWN_TOPIC_OR_PARTITION when p does not exist.
func (v *topicVerdicts) refusal(ctx context.Context, topic string, tv *topicVerdict, p int32) (code int16, refused bool) {
	switch {
	case tv.code != 0 || tv.failed:
		return tv.code, true
	case !v.hasPartition(ctx, topic, tv, p):
		return kerr.UnknownTopicOrPartition.Code, true
	}
	return 0, false
}
