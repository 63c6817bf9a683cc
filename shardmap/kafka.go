package shardmap

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// KafkaReassignment is the document Kafka's kafka-reassign-partitions
// tool reads with --reassignment-json-file and prints with --generate:
// {"version":1,"partitions":[{"topic","partition","replicas"}]}, the
// replicas broker IDs, the first the preferred leader. (The optional
// "log_dirs" of each partition is left out: every replica goes to "any"
// log directory.)
type KafkaReassignment struct {
	Version    int              `json:"version"`
	Partitions []KafkaPartition `json:"partitions"`
}

// KafkaPartition is one partition of a KafkaReassignment.
type KafkaPartition struct {
	Topic     string  `json:"topic"`
	Partition int     `json:"partition"`
	Replicas  []int32 `json:"replicas"`
}

// Kafka returns the plan, made from map from, as one reassignment per
// batch, to run in order with kafka-reassign-partitions --execute, each
// after the one before has completed (--verify): a batch's document lists
// every partition of topic that the batch changes, with its replicas after
// the batch, in order. Kafka copies a replica added before it drops one
// removed, and a changed first replica becomes the leader at the next
// preferred leader election (kafka-leader-election --election-type
// PREFERRED), so the batches keep the plan's promises. Node IDs are the
// broker IDs: each must be a decimal integer from 0 to 2^31-1 written
// without a sign or leading zeros, or Kafka fails with ErrInvalidOption.
// O(S + P·R) for S steps.
func (pl Plan) Kafka(from *Map, topic string) ([]KafkaReassignment, error) {
	if from.empty() {
		return nil, fmt.Errorf("%w: kafka: plan from an empty shard map", ErrInvalid)
	}
	if topic == "" {
		return nil, fmt.Errorf("%w: kafka: an empty topic name", ErrInvalid)
	}
	brokers := map[string]int32{}
	broker := func(id string) (int32, error) {
		if b, ok := brokers[id]; ok {
			return b, nil
		}
		n, err := strconv.ParseInt(id, 10, 32)
		if err != nil || n < 0 || strconv.FormatInt(n, 10) != id {
			return 0, fmt.Errorf("%w: kafka: node %q is not a broker ID (a decimal integer from 0 to %d)", ErrInvalid, id, math.MaxInt32)
		}
		brokers[id] = int32(n)
		return int32(n), nil
	}
	state := make([][]string, from.spec.Partitions)
	r := from.spec.Replicas
	for p := range state {
		for _, i := range from.assign[p*r : p*r+r] {
			state[p] = append(state[p], from.nodes[i].ID)
		}
	}
	out := make([]KafkaReassignment, 0, len(pl.Batches))
	at := 0
	for b, batch := range pl.Batches {
		if at+batch.Steps > len(pl.Steps) {
			return nil, fmt.Errorf("%w: kafka: the plan's batches hold more steps than it has", ErrInvalid)
		}
		var touched []int
		for _, st := range pl.Steps[at : at+batch.Steps] {
			if st.Partition < 0 || st.Partition >= len(state) {
				return nil, fmt.Errorf("%w: kafka: batch %d names partition %d of %d", ErrInvalid, b, st.Partition, len(state))
			}
			state[st.Partition] = applyStep(state[st.Partition], st)
			if len(touched) == 0 || touched[len(touched)-1] != st.Partition {
				touched = append(touched, st.Partition)
			}
		}
		at += batch.Steps
		slices.Sort(touched)
		touched = slices.Compact(touched)
		doc := KafkaReassignment{Version: 1, Partitions: make([]KafkaPartition, 0, len(touched))}
		for _, p := range touched {
			kp := KafkaPartition{Topic: topic, Partition: p, Replicas: make([]int32, len(state[p]))}
			for j, id := range state[p] {
				var err error
				if kp.Replicas[j], err = broker(id); err != nil {
					return nil, err
				}
			}
			doc.Partitions = append(doc.Partitions, kp)
		}
		out = append(out, doc)
	}
	return out, nil
}

// ParseKafkaAssignment reads topic's assignment from a reassignment
// document (what kafka-reassign-partitions --generate prints as the
// current assignment, or any reassignment file): its partitions must be 0
// to P-1, each once, each with its replicas (broker IDs, distinct), as
// many for each partition; "log_dirs" is accepted and ignored. An empty
// topic takes the document's only one. It returns each partition's
// replicas as node IDs (the broker IDs in decimal), leader first, and the
// topic. It fails with ErrInvalid otherwise. O(size of the data).
func ParseKafkaAssignment(data []byte, topic string) ([][]string, string, error) {
	doc, err := decodeKafka(data)
	if err != nil {
		return nil, "", err
	}
	topics := map[string]int{}
	for _, p := range doc.Partitions {
		topics[*p.Topic]++
	}
	if topic == "" {
		if len(topics) != 1 {
			names := make([]string, 0, len(topics))
			for t := range topics {
				names = append(names, t)
			}
			slices.Sort(names)
			return nil, "", fmt.Errorf("%w: kafka assignment: %d topics %q: name one", ErrInvalid, len(topics), names)
		}
		for t := range topics {
			topic = t
		}
	}
	n := topics[topic]
	if n == 0 || n > maxMapPartitions {
		return nil, "", fmt.Errorf("%w: kafka assignment: %d partitions of topic %q, want 1 to %d", ErrInvalid, n, topic, maxMapPartitions)
	}
	out := make([][]string, n)
	for _, p := range doc.Partitions {
		if *p.Topic != topic {
			continue
		}
		at := *p.Partition
		if at < 0 || at >= n || out[at] != nil {
			return nil, "", fmt.Errorf("%w: kafka assignment: %s-%d out of 0 to %d or listed twice", ErrInvalid, topic, at, n-1)
		}
		if out[at], err = brokerIDs(p.Replicas); err != nil {
			return nil, "", fmt.Errorf("%w: kafka assignment: %s-%d: %v", ErrInvalid, topic, at, err)
		}
	}
	for p := 1; p < n; p++ {
		if len(out[p]) != len(out[0]) {
			return nil, "", fmt.Errorf("%w: kafka assignment: %s-%d has %d replicas, %s-0 has %d: a shard map has one replication factor", ErrInvalid, topic, p, len(out[p]), topic, len(out[0]))
		}
	}
	return out, topic, nil
}

// kafkaDoc is a reassignment document as read.
type kafkaDoc struct {
	Version    *int `json:"version"`
	Partitions []struct {
		Topic     *string  `json:"topic"`
		Partition *int     `json:"partition"`
		Replicas  []int64  `json:"replicas"`
		LogDirs   []string `json:"log_dirs"`
	} `json:"partitions"`
}

// decodeKafka decodes a reassignment document: version 1 (or none), every
// partition with its topic and number.
func decodeKafka(data []byte) (*kafkaDoc, error) {
	var doc kafkaDoc
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%w: kafka assignment: %v", ErrInvalid, err)
	}
	if doc.Version != nil && *doc.Version != 1 {
		return nil, fmt.Errorf("%w: kafka assignment: version %d, want 1", ErrInvalid, *doc.Version)
	}
	for _, p := range doc.Partitions {
		if p.Topic == nil || p.Partition == nil {
			return nil, fmt.Errorf("%w: kafka assignment: a partition without its topic or number", ErrInvalid)
		}
	}
	return &doc, nil
}

// brokerIDs returns a partition's replicas as node IDs: 1 to 16 distinct
// broker IDs from 0 to 2^31-1.
func brokerIDs(replicas []int64) ([]string, error) {
	if len(replicas) == 0 || len(replicas) > maxMapReplicas {
		return nil, fmt.Errorf("%d replicas, want 1 to %d", len(replicas), maxMapReplicas)
	}
	out := make([]string, len(replicas))
	for j, b := range replicas {
		if b < 0 || b > math.MaxInt32 || slices.Contains(replicas[:j], b) {
			return nil, fmt.Errorf("broker %d out of range or twice", b)
		}
		out[j] = strconv.FormatInt(b, 10)
	}
	return out, nil
}
