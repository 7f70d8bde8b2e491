package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// MaxShareDeliveryCount is the last delivery-count label: that count or more
// (Kafka's group.share.delivery.count.limit is at most 10).
const MaxShareDeliveryCount = 10

// ShareDelta is what share-partitions did since the last report, as the
// share fetch path saw it in the states it holds.
type ShareDelta struct {
	Acquired     uint64                            // records acquired
	Deliveries   [MaxShareDeliveryCount + 1]uint64 // acquisitions by the delivery count they reached
	Accepted     uint64
	Released     uint64 // by RELEASE, a member leaving, a session closing
	Rejected     uint64
	AckRefused   uint64 // acknowledgement batches refused (INVALID_RECORD_STATE, INVALID_REQUEST, a failed write)
	Archived     uint64 // records archived for any reason
	LockExpiries uint64
	InFlight     int64 // change of the in-flight offsets held in this node's cache
}

// share is the KIP-932 share-group data path's collectors.
type share struct {
	inFlight   prometheus.Gauge
	acquired   prometheus.Counter
	deliveries [MaxShareDeliveryCount + 1]prometheus.Counter
	acks       [4]prometheus.Counter // accept, release, reject, refused
	archived   prometheus.Counter
	expiries   prometheus.Counter
}

func newShare(reg *prometheus.Registry) *share {
	s := &share{
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "share_inflight_records",
			Help: "Share groups: in-flight offsets (between a share-partition's start and end offsets) of the share-partitions this node holds cached."}),
		acquired: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "share_acquired_records_total",
			Help: "Share groups: records acquired by ShareFetch on this node (handed to a member under an acquisition lock)."}),
		archived: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "share_archived_records_total",
			Help: "Share groups: records archived, never to be delivered again (REJECT, GAP, past the delivery count limit, below the log start)."}),
		expiries: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "share_lock_expiries_total",
			Help: "Share groups: acquisition locks that ended unacknowledged (the record became available again, or was archived at the delivery limit), as this node observed them."}),
	}
	deliveries := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "share_deliveries_total",
		Help: "Share groups: acquisitions by the delivery count they reached (1: first delivery; 10: ten or more)."}, []string{"delivery_count"})
	for i := 1; i <= MaxShareDeliveryCount; i++ {
		s.deliveries[i] = deliveries.WithLabelValues(strconv.Itoa(i))
	}
	acks := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "share_acknowledgements_total",
		Help: "Share groups: records acknowledged, by outcome: accept, release, reject; refused counts acknowledgement batches answered an error."}, []string{"outcome"})
	for i, o := range []string{"accept", "release", "reject", "refused"} {
		s.acks[i] = acks.WithLabelValues(o)
	}
	reg.MustRegister(s.inFlight, s.acquired, deliveries, acks, s.archived, s.expiries)
	return s
}

// Share reports what share-partitions did (package sharefetch's Observer).
func (m *Metrics) Share(d ShareDelta) {
	s := m.share
	s.inFlight.Add(float64(d.InFlight))
	s.acquired.Add(float64(d.Acquired))
	for i := 1; i <= MaxShareDeliveryCount; i++ {
		if d.Deliveries[i] > 0 {
			s.deliveries[i].Add(float64(d.Deliveries[i]))
		}
	}
	for i, n := range [4]uint64{d.Accepted, d.Released, d.Rejected, d.AckRefused} {
		if n > 0 {
			s.acks[i].Add(float64(n))
		}
	}
	s.archived.Add(float64(d.Archived))
	s.expiries.Add(float64(d.LockExpiries))
}
