// Package geo is COP's global-scale mode (spec cop.md §1.3 mode 1, §3.3, §4.3; seed Fig. 6.1):
// training data is born at several collection sites, each of which cuts its samples into
// batches, plans every batch locally (Alg. 12) and ships batch and plan to one central site over
// the WAN; the central site admits the batches one at a time, transposes their plans onto
// everything admitted before (cop.Central), and trains on the result.
//
// Source and Centre are sans-IO state machines (protocol.Replica: time, timers and sends only
// through protocol.Env), so the simulator (Simulate: WAN delays, loss, duplication, reordering,
// a restart of the central site) and real processes (Driver; Serve, the registered pipeline
// cop-geo that `meridian cluster up` starts) run the same
// code. Shipping is at-least-once: a source resends every batch until the centre acknowledges
// it, and the centre recognises a batch it already has by its (source, sequence number).
//
// The centre admits batches in a fixed round-robin order: batch 1 of every source in source
// order, then batch 2 of every source still shipping, and so on (spec §3.3 allows any
// deterministic order; arrival order would need the order logged). A batch that arrives early
// waits until its turn; a source that has shipped its last batch drops out of the rotation.
// The admitted plan is therefore a function of the data alone, not of the network: whatever
// the WAN loses, duplicates or reorders, the model trained on it is bit-identical to the serial
// run over the concatenation in that order (Canonical). The centre acknowledges a batch once it
// is admitted and, in a real process, written to its admission log; a restarted centre replays
// that log (Centre.Restart, Driver) and loses only batches that were waiting for their turn,
// which their sources resend. Training checkpoints the model at every epoch barrier, so a
// restart during training re-runs the current epoch only.
package geo

import (
	"fmt"
	"math"

	"github.com/meridian-kv/meridian/ml/cop"
	"github.com/meridian-kv/meridian/ml/dataset"
	"github.com/meridian-kv/meridian/ml/train"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/wire"
	"github.com/meridian-kv/meridian/topology"
)

// Topology returns Fig. 6.1's deployment (the preset topology.COPFig61): the central
// learning datacenter first, then the four collection datacenters, source s in datacenter s+1.
func Topology() *topology.Topology {
	t, _ := topology.Preset(topology.COPFig61)
	return t
}

// Sources is Fig. 6.1's number of collection sites.
const Sources = 4

// CentreNode is the central site's node; source s (0-based) is node s+1.
const CentreNode protocol.NodeID = 0

// SourceNode returns the node of source s.
func SourceNode(s int) protocol.NodeID { return protocol.NodeID(s + 1) }

// Batch is one shipment of a collection site: a batch of its samples and their plan, made at the
// site (cop.NewBatch: local ids 1…n, version 0 for whatever came before the batch).
type Batch struct {
	Source int    // the collection site, 0-based
	Seq    uint64 // 1, 2, … per source
	Last   bool   // the source's last batch
	Data   *dataset.Dataset
	Plan   *cop.BatchPlan
}

// SizeBytes estimates the encoded size: per non-zero a feature, a value and two annotations.
func (b *Batch) SizeBytes() int {
	return 32 + b.Data.Len()*4 + b.Data.NNZ()*14 + len(b.Plan.Summary)*10
}

// Ack acknowledges that the centre admitted (and logged) batch Seq of Source.
type Ack struct {
	Source int
	Seq    uint64
}

// SizeBytes is the encoded size, at most.
func (a *Ack) SizeBytes() int { return 12 }

// NewBatch cuts samples of a source's data into batch seq and plans it.
func NewBatch(source int, seq uint64, last bool, data *dataset.Dataset) (*Batch, error) {
	txns, err := cop.SameSets(data.Offsets(), data.Features())
	if err != nil {
		return nil, err
	}
	plan, err := cop.NewBatch(sourceID(source), seq, txns)
	if err != nil {
		return nil, err
	}
	return &Batch{Source: source, Seq: seq, Last: last, Data: data, Plan: plan}, nil
}

func sourceID(s int) string { return fmt.Sprintf("source-%d", s+1) }

// Shares splits a dataset among n collection sites, each a contiguous share, as if each site had
// collected its part.
func Shares(d *dataset.Dataset, n int) ([]*dataset.Dataset, error) {
	if n < 1 || n > d.Len() {
		return nil, fmt.Errorf("geo: %d sources for %d samples", n, d.Len())
	}
	out := make([]*dataset.Dataset, n)
	for s := range n {
		out[s] = d.Slice(fmt.Sprintf("%s/%s", d.Name, sourceID(s)), s*d.Len()/n, (s+1)*d.Len()/n)
	}
	return out, nil
}

// batchCount is how many batches of at most size samples a share of n samples makes.
func batchCount(n, size int) int { return max(1, (n+size-1)/size) }

// batchOf returns batch seq (1-based) of share cut into batches of size samples.
func batchOf(share *dataset.Dataset, s int, seq uint64, size int) (*Batch, error) {
	n := batchCount(share.Len(), size)
	lo, hi := (int(seq)-1)*size, min(int(seq)*size, share.Len())
	return NewBatch(s, seq, int(seq) == n, share.Slice(fmt.Sprintf("%s/%d", share.Name, seq), lo, hi))
}

// Canonical returns the samples of shares cut into batches of batchSamples, concatenated in the
// centre's admission order: the order whose serial run every pipeline's model equals.
func Canonical(shares []*dataset.Dataset, batchSamples int) *dataset.Dataset {
	out := dataset.New("canonical")
	counts := make([]int, len(shares))
	most := 0
	for s, sh := range shares {
		counts[s] = batchCount(sh.Len(), batchSamples)
		most = max(most, counts[s])
	}
	for seq := range most {
		for s, sh := range shares {
			if seq < counts[s] {
				out.AppendAll(sh.Slice("", seq*batchSamples, min((seq+1)*batchSamples, sh.Len())))
			}
		}
	}
	return out
}

// Limits of a decoded message, so that a peer cannot make the centre allocate without bound.
const (
	maxSources      = 1 << 10
	maxBatchSamples = 1 << 22
	maxBatchNNZ     = 1 << 28
)

// Message tags.
const (
	tagBatch byte = 1
	tagAck   byte = 2
)

// Codec encodes the pipeline's messages for real processes. A batch is its samples (label,
// features as gaps, values as float32 bits) with every feature's read and write annotation,
// then the summary in parameter order; Decode checks the plan as cop.Annotate does and rejects
// anything malformed without panicking.
var Codec protocol.Codec = wire.Codec{Protocol: "cop-geo", Write: write, Read: read}

func write(w *wire.Writer, m protocol.Message) bool {
	switch m := m.(type) {
	case *Ack:
		w.Byte(tagAck)
		w.Int("source", m.Source, maxSources)
		w.Uvarint(m.Seq)
	case *Batch:
		w.Byte(tagBatch)
		w.Int("source", m.Source, maxSources)
		w.Uvarint(m.Seq)
		w.Bool(m.Last)
		d := m.Data
		w.Count("samples", d.Len(), maxBatchSamples)
		reads, writes := m.Plan.Plan.Annotations()
		k := 0
		for i := range d.Len() {
			s := d.Sample(i)
			w.Bool(s.Label > 0)
			w.Count("features", len(s.Features), maxBatchNNZ)
			prev := uint32(0)
			for j, f := range s.Features {
				w.Uvarint(uint64(f - prev))
				prev = f
				w.Uvarint(uint64(math.Float32bits(s.Values[j])))
				w.Uvarint(uint64(reads[k]))
				w.Uvarint(writes[k])
				k++
			}
		}
		w.Count("summary", len(m.Plan.Summary), maxBatchNNZ)
		for _, s := range m.Plan.Summary {
			w.Uvarint(uint64(s.Param))
			w.Uvarint(uint64(s.LastLocalWriter))
			w.Uvarint(uint64(s.TailReaders))
		}
	default:
		return false
	}
	return true
}

func read(r *wire.Reader) protocol.Message {
	switch tag := r.Byte("tag"); tag {
	case tagAck:
		return &Ack{Source: r.Int("source", maxSources), Seq: r.Uvarint("seq")}
	case tagBatch:
		b := &Batch{Source: r.Int("source", maxSources), Seq: r.Uvarint("seq"), Last: r.Bool("last")}
		n := r.Count("samples", maxBatchSamples, 2)
		d := dataset.New(sourceID(b.Source))
		var reads []cop.TxnID
		var writes []uint64
		var features []uint32
		var values []float32
		for range n {
			label := -1.0
			if r.Bool("label") {
				label = 1
			}
			nnz := r.Count("features", maxBatchNNZ, 4)
			features, values = features[:0], values[:0]
			f := uint64(0)
			for j := range nnz {
				gap := r.Uvarint("feature")
				if j > 0 && gap == 0 || f+gap > math.MaxUint32 {
					r.Fail("feature", "features not ascending and distinct")
				}
				f += gap
				bits := r.Uvarint("value")
				if bits > math.MaxUint32 {
					r.Fail("value", "not a float32")
				}
				features, values = append(features, uint32(f)), append(values, math.Float32frombits(uint32(bits)))
				v := r.Uvarint("read version")
				if v > math.MaxUint32 {
					r.Fail("read version", "out of range")
				}
				reads, writes = append(reads, cop.TxnID(v)), append(writes, r.Uvarint("write"))
			}
			if r.Err() != nil {
				return nil
			}
			if err := d.Append(label, features, values); err != nil {
				r.Fail("sample", "%v", err)
				return nil
			}
		}
		count := r.Count("summary", maxBatchNNZ, 3)
		summary := make([]cop.ParamSummary, 0, count)
		for range count {
			x, last, tail := r.Uvarint("param"), r.Uvarint("last writer"), r.Uvarint("tail readers")
			if x > math.MaxUint32 || last > math.MaxUint32 || tail > math.MaxUint32 {
				r.Fail("summary", "out of range")
				return nil
			}
			summary = append(summary, cop.ParamSummary{Param: uint32(x), LastLocalWriter: cop.TxnID(last), TailReaders: uint32(tail)})
		}
		if r.Err() != nil {
			return nil
		}
		if n == 0 {
			r.Fail("samples", "an empty batch")
			return nil
		}
		txns, err := cop.SameSets(d.Offsets(), d.Features())
		if err != nil {
			r.Fail("samples", "%v", err)
			return nil
		}
		plan, err := cop.Annotate(txns, reads, writes)
		if err != nil {
			r.Fail("plan", "%v", err)
			return nil
		}
		b.Data = d
		b.Plan = &cop.BatchPlan{SourceID: sourceID(b.Source), BatchSeq: b.Seq, Plan: plan, Summary: summary}
		return b
	default:
		r.Fail("tag", "unknown message tag %d", tag)
		return nil
	}
}

// SerialReference trains the serial reference (cop.Serial) on the canonical order of shares cut
// into batches of batchSamples and returns its result: the model every run of the pipeline must
// reproduce bit for bit (compare the ModelSHA256).
func SerialReference(shares []*dataset.Dataset, batchSamples int, opts train.Options) (*train.Result, error) {
	canon := Canonical(shares, batchSamples)
	txns, err := cop.SameSets(canon.Offsets(), canon.Features())
	if err != nil {
		return nil, err
	}
	plan, err := cop.PlanAll(txns)
	if err != nil {
		return nil, err
	}
	opts.Checkpoint, opts.Resume = nil, nil
	return train.Run(&train.Data{Train: canon, Test: canon, Txns: txns, Plan: plan}, cop.Serial, 1, opts)
}
