package dev

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// compactMinBytes is the log size below which boot never compacts (a
// variable so tests can force compaction on small logs).
var compactMinBytes int64 = 64 << 20

// snapshotFrameBytes bounds the payload bytes of one snapshot frame.
const snapshotFrameBytes = 4 << 20

// liveBytes estimates how many log bytes the current state needs.
func (s *state) liveBytes() int64 {
	var n int64
	for _, t := range s.tenants {
		for _, q := range t.queues {
			n += 256
			for _, p := range q.parts {
				n += p.bytes + int64(len(p.recs))*64
			}
		}
		for _, sp := range t.kv {
			for k, r := range sp.rows {
				n += int64(len(k)+len(r.value)) + 48
			}
		}
	}
	return n
}

// snapshot calls emit with frames that rebuild the current state from an
// empty one: queues with their ids and options, retained records with their
// offsets and commit times (an emptied partition keeps its log end), live
// KV rows with their versions, and the version sequence.
func (s *state) snapshot(now int64, emit func([]op) error) error {
	var frame []op
	size := 0
	add := func(o op, bytes int) error {
		frame = append(frame, o)
		size += bytes + 64
		if size < snapshotFrameBytes {
			return nil
		}
		err := emit(frame)
		frame, size = nil, 0
		return err
	}
	for _, tn := range sortedKeys(s.tenants) {
		t := s.tenants[tn]
		for _, qn := range sortedKeys(t.queues) {
			q := t.queues[qn]
			if err := add(&opQueueSet{tenant: tn, name: qn, id: q.id, created: q.created, opts: q.opts}, len(qn)); err != nil {
				return err
			}
			for _, pn := range sortedKeys(q.parts) {
				p := q.parts[pn]
				if len(p.recs) == 0 {
					if err := add(&opRecords{tenant: tn, queue: qn, part: pn, base: p.base, ts: p.lastTS}, 0); err != nil {
						return err
					}
					continue
				}
				// One op per run of records sharing a commit time.
				for i := 0; i < len(p.recs); {
					j, bytes := i, 0
					for j < len(p.recs) && p.recs[j].ts == p.recs[i].ts && bytes < snapshotFrameBytes {
						bytes += len(p.recs[j].payload) + len(p.recs[j].msgID) + len(p.recs[j].txID)
						j++
					}
					o := &opRecords{tenant: tn, queue: qn, part: pn, base: p.base + int64(i), ts: p.recs[i].ts, recs: p.recs[i:j:j]}
					if err := add(o, bytes); err != nil {
						return err
					}
					i = j
				}
			}
		}
		for _, ns := range sortedKeys(t.kv) {
			sp := t.kv[ns]
			for _, k := range sp.keys {
				if r := sp.rows[k]; r.live(now) {
					if err := add(&opKVSet{tenant: tn, ns: ns, key: k, row: r}, len(k)+len(r.value)); err != nil {
						return err
					}
				}
			}
		}
	}
	frame = append(frame, &opKVSeq{seq: s.kvSeq})
	return emit(frame)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// compactLog rewrites dir's log as a snapshot of s: written to a temporary
// file, synced, then renamed over the log (and the directory synced), so a
// crash at any point leaves either the old log or the new one.
func compactLog(dir string, s *state, now int64) (int64, error) {
	tmp := filepath.Join(dir, walName+".compact")
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return 0, err
	}
	var written int64
	var buf []byte
	err = s.snapshot(now, func(ops []op) error {
		buf = appendFrame(buf[:0], ops)
		n, err := f.Write(buf)
		written += int64(n)
		return err
	})
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, walName))
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		os.Remove(tmp)
		return 0, fmt.Errorf("compact log: %w", err)
	}
	return written, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
