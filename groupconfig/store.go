package groupconfig

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/queen-mq/queen-kafka/faults"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/sharepartition"
)

// KV is the one Queen route the rows need. *queen.Client satisfies it.
type KV = queen.KVCaller

// DefaultTTL is how long Get answers from its cache: an alter made at
// another node reaches this node's groups within it (an alter made here,
// at once; DescribeConfigs always reads the row).
const DefaultTTL = time.Second

// maxCached bounds Get's cache: past it the expired entries go, and if
// none had expired, all of them (each is one KV read to rebuild).
const maxCached = 10000

// casTries is how many times an alter re-reads and re-applies after losing
// its compare-and-set to another node's alter of the same group.
const casTries = 5

// Config is a Store's settings.
type Config struct {
	Broker Broker           // the broker-level settings (KafkaBroker with the facade's)
	TTL    time.Duration    // Get's cache lifetime; 0 is DefaultTTL, negative none
	Now    func() time.Time // nil is time.Now
}

// Store reads and writes groups' config rows.
type Store struct {
	broker Broker
	ttl    time.Duration
	now    func() time.Time

	mu    sync.Mutex
	cache map[cacheKey]cached
}

// cacheKey files an entry under the KV client it was read with as well as
// the group: each credential (tenant) has its own client, and its own rows.
type cacheKey struct {
	kv    KV
	group string
}

type cached struct {
	v  Values
	at time.Time
}

// New is a Store with cfg's settings.
func New(cfg Config) *Store {
	s := &Store{broker: cfg.Broker, ttl: cfg.TTL, now: cfg.Now, cache: map[cacheKey]cached{}}
	if s.broker == nil {
		s.broker = KafkaBroker()
	}
	if s.ttl == 0 {
		s.ttl = DefaultTTL
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s
}

// Broker is the broker-level settings the store validates against.
func (s *Store) Broker() Broker { return s.broker }

// Get is group's effective settings: its overrides over the broker-level
// settings, from a cache at most the TTL old.
func (s *Store) Get(ctx context.Context, kv KV, group string) (Values, error) {
	k := cacheKey{kv, group}
	now := s.now()
	// A client that cannot key a map (never *queen.Client) is not cached.
	cache := s.ttl > 0 && reflect.TypeOf(kv).Comparable()
	if cache {
		s.mu.Lock()
		e, ok := s.cache[k]
		s.mu.Unlock()
		if ok && now.Sub(e.at) < s.ttl {
			return e.v, nil
		}
	}
	overrides, _, err := s.read(ctx, kv, group)
	if err != nil {
		return Values{}, err
	}
	v := s.broker.Values(overrides)
	if cache {
		s.mu.Lock()
		if len(s.cache) >= maxCached {
			maps.DeleteFunc(s.cache, func(_ cacheKey, e cached) bool { return now.Sub(e.at) >= s.ttl })
			if len(s.cache) >= maxCached {
				clear(s.cache)
			}
		}
		s.cache[k] = cached{v: v, at: now}
		s.mu.Unlock()
	}
	return v, nil
}

// Overrides is group's stored overrides, read afresh.
func (s *Store) Overrides(ctx context.Context, kv KV, group string) (map[string]string, error) {
	o, _, err := s.read(ctx, kv, group)
	return o, err
}

// read is the row: its overrides (empty when absent) and version (0).
func (s *Store) read(ctx context.Context, kv KV, group string) (map[string]string, int64, error) {
	key := queen.GroupCfgKey(group)
	rows, err := queen.ReadKeys(ctx, kv, []string{key}, 1)
	if err != nil {
		return nil, 0, err
	}
	r, ok := rows[key]
	if !ok {
		return map[string]string{}, 0, nil
	}
	o, err := decodeRow(r.Value)
	if err != nil {
		return nil, 0, &queen.Error{Kind: queen.KindProtocol, Route: "POST /api/v1/kv", Message: fmt.Sprintf("%s: %v", key, err)}
	}
	return o, r.Version, nil
}

// Outcome is an alter's answer for one resource.
type Outcome struct {
	Code     int16
	Msg      string
	Throttle int32
}

// Alter applies ops to group's overrides with apply (ApplyIncremental or
// ApplyLegacy), validates the result against the broker-level settings,
// and, unless validateOnly, writes it with compare-and-set on the version
// it was computed from: an alter that loses to another node's re-reads
// and re-applies its ops to the winner's row, so neither is lost. A
// refusal is INVALID_CONFIG with Kafka's sentence; an empty group name is
// INVALID_REQUEST; a failed Queen call is answered as a topic write's.
func (s *Store) Alter(ctx context.Context, kv KV, group string, ops []Op, apply func(map[string]string, []Op) (map[string]string, error), validateOnly bool) Outcome {
	if group == "" {
		return Outcome{Code: kerr.InvalidRequest.Code, Msg: "Default group resources are not allowed."}
	}
	for try := 0; ; try++ {
		current, version, err := s.read(ctx, kv, group)
		if err != nil {
			return writeFault(err)
		}
		next, err := apply(current, ops)
		if err == nil {
			err = s.broker.Validate(next)
		}
		if err != nil {
			var ce *configError
			if errors.As(err, &ce) {
				return Outcome{Code: kerr.InvalidConfig.Code, Msg: ce.msg}
			}
			return Outcome{Code: kerr.UnknownServerError.Code, Msg: err.Error()}
		}
		next = canonicalize(next)
		if validateOnly || maps.Equal(next, current) {
			return Outcome{}
		}
		applied, err := s.write(ctx, kv, group, next, version)
		if err != nil {
			return writeFault(err)
		}
		if applied {
			s.mu.Lock()
			delete(s.cache, cacheKey{kv, group})
			s.mu.Unlock()
			return Outcome{}
		}
		if try+1 == casTries {
			return Outcome{Code: kerr.RequestTimedOut.Code, Msg: fmt.Sprintf("The configs of group %s were altered concurrently %d times; retry.", group, casTries)}
		}
	}
}

// write puts next (or deletes the row when next is empty) on condition
// that the row is still at version (0: absent).
func (s *Store) write(ctx context.Context, kv KV, group string, next map[string]string, version int64) (bool, error) {
	key := queen.GroupCfgKey(group)
	op := queen.KVOp{Op: queen.OpPut, NS: queen.Namespace, Key: key, Value: encodeRow(next), Forever: true, Expect: &version}
	if len(next) == 0 {
		op = queen.KVOp{Op: queen.OpDelete, NS: queen.Namespace, Key: key, Expect: &version}
	}
	res, err := kv.KV(ctx, []queen.KVOp{op})
	if err != nil {
		return false, err
	}
	if len(res) != 1 {
		return false, &queen.Error{Kind: queen.KindProtocol, Route: "POST /api/v1/kv", Message: fmt.Sprintf("%d results for one operation", len(res))}
	}
	return res[0].Applied, nil
}

func writeFault(err error) Outcome {
	code, throttle, msg := faults.TopicWrite(err)
	return Outcome{Code: code, Msg: msg, Throttle: throttle}
}

// Share is group's share-partition limits and share.auto.offset.reset, as
// Get answers them (the shape package sharefetch's Configs asks for).
func (s *Store) Share(ctx context.Context, kv KV, group string) (sharepartition.Config, sharepartition.Reset, error) {
	v, err := s.Get(ctx, kv, group)
	if err != nil {
		return sharepartition.Config{}, sharepartition.Reset{}, err
	}
	return v.Share(), v.ShareAutoOffsetReset, nil
}
