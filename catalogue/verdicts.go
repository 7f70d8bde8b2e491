package catalogue

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Verdicts is what one data-path request (Produce, Fetch, ListOffsets)
// has learned of the topics it names: each topic is checked once however
// many times it is named, and the throttle a check carried raises the
// response's throttle_time_ms once. It reads the catalogues alone; c is
// only the request's caller, whose identity and credential pick and read
// its catalogue.
type Verdicts struct {
	cats     *Catalogues
	c        Caller
	fault    Fault
	throttle *int32 // the response's throttle_time_ms
	seen     map[string]Verdict
	byID     map[[16]byte]idVerdict // topics named by id (OfID)
	fresh    bool                   // a miss is looked up again (FindFresh)
}

// Fault maps a failed catalogue read the way the calling API maps any
// Queen failure: the partition's code, the throttle, the message, and
// fatal when the request is not to be answered at all (its connection is
// going away).
type Fault = func(err error) (code int16, throttle int32, msg string, fatal error)

// Verdict is what one request learns of one topic: its width, or the
// code every partition of it is refused with.
type Verdict struct {
	Width    int32
	Code     int16
	Throttle int32
	Msg      string
	Failed   bool // the catalogue could not be read (Code may be 0 under a throttle)
	// Config is the topic's Kafka configs as the catalogue holds them
	// (max.message.bytes for Produce, compression.type for Fetch).
	Config TopicConfig
}

// UnknownPartitionMsg is Kafka's message of UNKNOWN_TOPIC_OR_PARTITION.
const UnknownPartitionMsg = "This server does not host this topic-partition."

// idVerdict is what a request learned of a topic id: the name it resolved
// to ("" when it did not) and the verdict.
type idVerdict struct {
	name string
	tv   Verdict
}

// Verdicts starts a request's verdicts: c's catalogue, fault its API's
// mapping of a failed read, throttle its response's throttle_time_ms.
func (cs *Catalogues) Verdicts(c Caller, fault Fault, throttle *int32) *Verdicts {
	return &Verdicts{cats: cs, c: c, fault: fault, throttle: throttle, seen: make(map[string]Verdict)}
}

// FreshOnMiss makes v look a topic it does not find up again after a
// listing (FindFresh), for a request naming topics the client may have
// learned of elsewhere than from this node (TxnOffsetCommit).
func (v *Verdicts) FreshOnMiss() *Verdicts {
	v.fresh = true
	return v
}

// Of returns topic's verdict, checking it with dataTopic the first time. An
// error (a canceled call) closes the connection.
func (v *Verdicts) Of(ctx context.Context, topic string) (Verdict, error) {
	if tv, ok := v.seen[topic]; ok {
		return tv, nil
	}
	tv, err := v.cats.dataTopic(ctx, v.c, topic, v.fault, v.fresh)
	if err != nil {
		return tv, err
	}
	*v.throttle = max(*v.throttle, tv.Throttle)
	v.seen[topic] = tv
	return tv, nil
}

// OfID is Of for a topic named by id (Produce v13, Fetch v13+): the topic's
// name and verdict. An id no addressable topic has is refused
// UNKNOWN_TOPIC_ID with name "" (Kafka's answer); a failed catalogue read
// is mapped by fault as for a name. Each id is checked once per request.
func (v *Verdicts) OfID(ctx context.Context, id [16]byte) (string, Verdict, error) {
	if iv, ok := v.byID[id]; ok {
		return iv.name, iv.tv, nil
	}
	var iv idVerdict
	name, width, ok, err := v.cats.ResolveID(ctx, v.c, id)
	switch {
	case err != nil:
		code, throttle, msg, fatal := v.fault(err)
		if fatal != nil {
			return "", Verdict{}, fatal
		}
		iv.tv = Verdict{Code: code, Throttle: throttle, Msg: msg, Failed: true}
	case !ok:
		iv.tv = Verdict{Code: kerr.UnknownTopicID.Code, Msg: UnknownTopicIDMsg}
	default:
		iv = idVerdict{name: name, tv: v.cats.servedTopic(v.c, name, width)}
		if prev, ok := v.seen[name]; ok {
			iv.tv = prev
		} else {
			v.seen[name] = iv.tv
		}
	}
	*v.throttle = max(*v.throttle, iv.tv.Throttle)
	if v.byID == nil {
		v.byID = make(map[[16]byte]idVerdict)
	}
	v.byID[id] = iv
	return iv.name, iv.tv, nil
}

// UnknownTopicIDMsg is Kafka's message of UNKNOWN_TOPIC_ID.
const UnknownTopicIDMsg = "This server does not host this topic ID."

// HasPartition reports whether partition p of a topic whose verdict is tv
// exists (see knownPartition, which may raise tv.Width).
func (v *Verdicts) HasPartition(ctx context.Context, topic string, tv *Verdict, p int32) bool {
	return p >= 0 && v.cats.knownPartition(ctx, v.c, topic, tv, p)
}

// Refusal is the code a read (Fetch, ListOffsets) of partition p of a topic
// whose verdict is tv is refused with, and whether it is refused: the
// topic's own code when the topic was refused or could not be checked (0
// under a bare throttle), UNKNOWN_TOPIC_OR_PARTITION when p does not exist.
func (v *Verdicts) Refusal(ctx context.Context, topic string, tv *Verdict, p int32) (code int16, refused bool) {
	switch {
	case tv.Code != 0 || tv.Failed:
		return tv.Code, true
	case !v.HasPartition(ctx, topic, tv, p):
		return kerr.UnknownTopicOrPartition.Code, true
	}
	return 0, false
}

// dataTopic checks a topic named by a data-path request (Produce, Fetch,
// ListOffsets). A topic not in the catalogue is UNKNOWN_TOPIC_OR_PARTITION:
// a producer creates topics through Metadata, as against Apache Kafka, and
// `__` names never exist (seed 001). fault maps a failed catalogue read the
// way the calling API maps any Queen failure; fresh looks a miss up again
// (FindFresh).
func (cs *Catalogues) dataTopic(ctx context.Context, c Caller, topic string, fault Fault, fresh bool) (Verdict, error) {
	if InternalTopic(topic) {
		return Verdict{Code: kerr.UnknownTopicOrPartition.Code, Msg: UnknownPartitionMsg}, nil
	}
	if why := TopicNameError(topic); why != "" {
		return Verdict{Code: kerr.InvalidTopicException.Code, Msg: why}, nil
	}
	width, exists, err := cs.topicWidth(ctx, c, topic, fresh)
	if err != nil {
		code, throttle, msg, fatal := fault(err)
		return Verdict{Code: code, Throttle: throttle, Msg: msg, Failed: true}, fatal
	}
	if !exists {
		return Verdict{Code: kerr.UnknownTopicOrPartition.Code, Msg: UnknownPartitionMsg}, nil
	}
	return cs.servedTopic(c, topic, width), nil
}

// servedTopic is the verdict of an existing topic the request may use:
// its width and its configs (every accepted verdict carries them, since
// the zero config would refuse every batch as over max.message.bytes).
func (cs *Catalogues) servedTopic(c Caller, topic string, width int32) Verdict {
	return Verdict{Width: width, Config: cs.cachedTopicConfig(c, topic)}
}
