// Command queues is the runnable example of docs/queues-for-kafka.md: a
// work queue over a Kafka topic with a KIP-932 share group, through
// franz-go's share consumer. It produces ten jobs, then two consumers of
// one share group work through them together: each job goes to one
// consumer at a time, job-3 is RELEASEd on its first delivery (handed
// back, delivered again with its delivery count raised), job-7 is
// REJECTed (archived, never delivered again), every other delivery is
// ACCEPTed. It prints each decision, then the share group's start offset.
//
//	go run ./examples/queues -brokers localhost:9092   (from e2e/)
//
// e2e/queues_example_test.go runs it against a facade.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func main() {
	brokers := flag.String("brokers", "localhost:9092", "bootstrap servers, comma separated")
	topic := flag.String("topic", "jobs", "the topic to produce the jobs to")
	group := flag.String("group", "workers", "the share group")
	flag.Parse()
	seeds := kgo.SeedBrokers(strings.Split(*brokers, ",")...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	admin, err := kgo.NewClient(seeds)
	check(err)
	defer admin.Close()
	adm := kadm.NewClient(admin)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, *topic); err != nil && !isExists(err) {
		check(err)
	}
	// A share group starts reading at the end of the log unless told
	// otherwise (share.auto.offset.reset, a group config): start at the
	// beginning, so the jobs produced below are read.
	check(setGroupConfig(ctx, admin, *group, "share.auto.offset.reset", "earliest"))

	const jobs = 10
	for i := range jobs {
		r := &kgo.Record{Topic: *topic, Value: fmt.Appendf(nil, "job-%d", i)}
		check(admin.ProduceSync(ctx, r).FirstErr())
	}

	var (
		mu       sync.Mutex
		finished int // jobs ACCEPTed or REJECTed
		lines    []string
	)
	var wg sync.WaitGroup
	for c := 1; c <= 2; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl, err := kgo.NewClient(seeds, kgo.ShareGroup(*group), kgo.ConsumeTopics(*topic))
			check(err)
			defer cl.Close() // leaves the group; what it still holds is released
			for {
				mu.Lock()
				done := finished == jobs
				mu.Unlock()
				if done || ctx.Err() != nil {
					return
				}
				poll, stop := context.WithTimeout(ctx, time.Second)
				fetches := cl.PollFetches(poll)
				stop()
				for r := range fetches.RecordsAll() {
					job, n := string(r.Value), r.DeliveryCount()
					ack := kgo.AckAccept
					switch {
					case job == "job-3" && n == 1:
						ack = kgo.AckRelease // not now: give it back
					case job == "job-7":
						ack = kgo.AckReject // poison: archive it
					}
					r.Ack(ack)
					mu.Lock()
					lines = append(lines, fmt.Sprintf("%s delivery %d: %s", job, n, ack))
					if ack != kgo.AckRelease {
						finished++
					}
					mu.Unlock()
				}
				// Acks ride on the next poll; flush them now instead.
				if err := cl.FlushAcks(ctx); err != nil {
					check(err)
				}
			}
		}()
	}
	wg.Wait()
	check(ctx.Err())
	// Which consumer got which job varies from run to run; what became of
	// each job does not.
	slices.SortFunc(lines, func(a, b string) int { return cmp.Compare(jobOrder(a), jobOrder(b)) })
	for _, l := range lines {
		fmt.Println(l)
	}

	described, err := adm.DescribeShareGroupOffsets(ctx, *group)
	check(err)
	check(described.Error())
	described.Each(func(g kadm.DescribedShareGroupOffsets) {
		g.Offsets.Each(func(o kadm.ShareOffset) {
			fmt.Printf("share group %s: %s[%d] start offset %d\n", g.Group, o.Topic, o.Partition, o.StartOffset)
		})
	})
}

// setGroupConfig sets one group config with IncrementalAlterConfigs on the
// GROUP resource (kadm has no helper for it).
func setGroupConfig(ctx context.Context, cl *kgo.Client, group, name, value string) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Value = name, kmsg.StringPtr(value)
	res.Configs = append(res.Configs, cfg)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.Resources[0].ErrorCode)
}

func isExists(err error) bool { return errors.Is(err, kerr.TopicAlreadyExists) }

// jobOrder orders the printed lines by job number, then delivery.
func jobOrder(line string) int {
	var job, n int
	fmt.Sscanf(line, "job-%d delivery %d", &job, &n)
	return job*100 + n
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "queues:", err)
		os.Exit(1)
	}
}
