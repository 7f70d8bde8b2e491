package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// rule reports what the worker does with key at delivery count dc: REJECT
// keys ≡ 7 (mod 100) and RELEASE keys ≡ 3 (mod 10) on their first delivery,
// ACCEPT the rest (and every redelivery).
func rule(key int, dc int32) kgo.AckStatus {
	switch {
	case dc <= 1 && key%100 == 7:
		return kgo.AckReject
	case dc <= 1 && key%10 == 3:
		return kgo.AckRelease
	}
	return kgo.AckAccept
}

var ackLetter = map[kgo.AckStatus]string{kgo.AckAccept: "A", kgo.AckRelease: "L", kgo.AckReject: "J"}

func main() {
	seeds := flag.String("seeds", "", "bootstrap servers, comma separated")
	group := flag.String("group", "", "share group")
	topic := flag.String("topic", "", "topic")
	hold := flag.Duration("hold", 0, "how long to keep each batch before acknowledging it (the work)")
	flag.Parse()
	if *seeds == "" || *group == "" || *topic == "" {
		fmt.Fprintln(os.Stderr, "shareworker: -seeds, -group and -topic are required")
		os.Exit(2)
	}

	// Per-partition outcomes of the acks sent since the last FlushAcks.
	var mu sync.Mutex
	failed := map[int32]error{}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(strings.Split(*seeds, ",")...),
		kgo.ShareGroup(*group),
		kgo.ConsumeTopics(*topic),
		kgo.ShareMaxRecords(50),
		kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
			mu.Lock()
			defer mu.Unlock()
			for _, r := range rs {
				if r.Err != nil && r.Topic == *topic {
					failed[r.Partition] = r.Err
				}
			}
		}),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, "shareworker:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	type ack struct {
		r   *kgo.Record
		p   int32
		off int64
		st  kgo.AckStatus
	}
	for ctx.Err() == nil {
		pollCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fetches := cl.PollFetches(pollCtx)
		cancel()
		fetches.EachError(func(t string, p int32, err error) {
			if err != context.Canceled && err != context.DeadlineExceeded {
				fmt.Fprintf(os.Stderr, "shareworker: fetch %s/%d: %v\n", t, p, err)
			}
		})
		var acks []ack
		fetches.EachRecord(func(r *kgo.Record) {
			key, err := strconv.Atoi(string(r.Key))
			if err != nil {
				fmt.Fprintf(os.Stderr, "shareworker: key %q: %v\n", r.Key, err)
				os.Exit(1)
			}
			dc := r.DeliveryCount()
			line(fmt.Sprintf("D %d %d %d %d\n", r.Partition, r.Offset, key, dc))
			acks = append(acks, ack{r, r.Partition, r.Offset, rule(key, dc)})
		})
		if len(acks) == 0 {
			continue
		}
		// The work, then the acks: kgo sends an ack marked with Ack on its
		// next background ShareFetch, not only at FlushAcks, so an ack
		// marked before the work would leave while the work is still on.
		time.Sleep(*hold)
		for _, a := range acks {
			a.r.Ack(a.st)
		}
		flushCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := cl.FlushAcks(flushCtx)
		cancel()
		mu.Lock()
		bad := failed
		failed = map[int32]error{}
		mu.Unlock()
		for _, a := range acks {
			verdict := "C"
			if err != nil || bad[a.p] != nil {
				verdict = "F"
			}
			line(fmt.Sprintf("%s %d %d %s\n", verdict, a.p, a.off, ackLetter[a.st]))
		}
		for p, e := range bad {
			fmt.Fprintf(os.Stderr, "shareworker: ack of partition %d: %v\n", p, e)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "shareworker: flush acks: %v\n", err)
		}
	}
	cl.Close()
}

// line writes s in one write: stdout is a pipe, where a write this short is
// atomic.
func line(s string) {
	if _, err := os.Stdout.WriteString(s); err != nil {
		os.Exit(1)
	}
}
