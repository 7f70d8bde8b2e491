package e2e

import "github.com/twmb/franz-go/pkg/kmsg"

// fetchP0 is a consumer's Fetch of partition 0 of topic from offset at
// version, 1 MiB for the partition and for the response, sessionless.
// kgo negotiates the version of a raw request up to the broker's highest,
// whatever version says; byNameFetch stops it at v12, the last that names
// topics by name (v13+ names them by id only).
func fetchP0(topic string, version int16, offset int64) byNameFetch {
	req := kmsg.NewPtrFetchRequest()
	req.Version = version
	req.ReplicaID, req.MaxBytes = -1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.FetchOffset = offset
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	return byNameFetch{req}
}

// byNameFetch is a Fetch request naming its topics by name (up to v12).
type byNameFetch struct{ *kmsg.FetchRequest }

func (byNameFetch) MaxVersion() int16 { return 12 }

// produceRaw is an acks=all Produce of one record batch to one partition.
func produceRaw(topic string, partition, timeoutMs int32, records []byte) byNameProduce {
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, timeoutMs
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return byNameProduce{req}
}

// byNameProduce is a Produce request naming its topics by name, which
// Produce does up to v12: kgo would negotiate v13, which names them by id
// only (franz-go's own producer stops at v12 for a topic whose id it
// lacks, for the same reason).
type byNameProduce struct{ *kmsg.ProduceRequest }

func (byNameProduce) MaxVersion() int16 { return 12 }

// metadataReq asks for topics by name (none: every topic); auto-creation is
// off until the caller sets AllowAutoTopicCreation.
func metadataReq(topics ...string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	for _, tp := range topics {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(tp)
		req.Topics = append(req.Topics, mt)
	}
	return req
}

// commitReq is an assign()-style OffsetCommit (generation -1, no member) of
// one partition of topic at offset, naming the topic by name, which
// OffsetCommit does up to v9 (byNameCommit: v10 names it by id only).
func commitReq(group, topic string, partition int32, offset int64) byNameCommit {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = partition, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return byNameCommit{req}
}

// byNameCommit is an OffsetCommit naming its topics by name (up to v9).
type byNameCommit struct{ *kmsg.OffsetCommitRequest }

func (byNameCommit) MaxVersion() int16 { return 9 }

// byNameOffsetFetch is an OffsetFetch naming its topics by name (up to v9).
type byNameOffsetFetch struct{ *kmsg.OffsetFetchRequest }

func (byNameOffsetFetch) MaxVersion() int16 { return 9 }
