package geo

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/meridian-kv/meridian/ml/cop"
	"github.com/meridian-kv/meridian/ml/dataset"
	"github.com/meridian-kv/meridian/ml/svm"
	"github.com/meridian-kv/meridian/ml/train"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/topology"
)

// ProtocolName is the pipeline's name in the registry: `meridian cluster up --protocol cop-geo
// --topology cop-fig6.1` starts the centre and the four sources as processes.
const ProtocolName = "cop-geo"

func init() {
	registry.Register(ProtocolName, registry.Entry{
		Description: "COP's global-scale mode: four collection sites ship planned batches over the WAN to a central site, which trains (seed 000 ch. 6, Fig. 6.1; a pipeline, not a store)",
		New:         newReplica,
		Codec:       Codec,
		Family:      registry.Pipeline,
		Nodes: func(p protocol.Params, dcs int) ([]protocol.Node, error) {
			if _, err := ParseParams(p, dcs); err != nil {
				return nil, err
			}
			nodes := make([]protocol.Node, dcs)
			for i := range nodes {
				nodes[i] = protocol.Node{ID: protocol.NodeID(i), DC: i}
			}
			return nodes, nil
		},
		Roles: func(p protocol.Params, dcs int) ([]string, error) {
			if _, err := ParseParams(p, dcs); err != nil {
				return nil, err
			}
			roles := []string{"centre"}
			for s := range Sources {
				roles = append(roles, sourceID(s))
			}
			return roles, nil
		},
		Serve: Serve,
	})
}

// Params are the pipeline's parameters (protocol.Params, the cluster file's params), the same
// for every node: what the sources generate and ship, and how the centre trains.
type Params struct {
	// Dataset is the generator every source runs (kdd-like, kddb-like, imdb-like, hotspot:H);
	// each keeps its quarter of Samples samples (Shares).
	Dataset string
	Samples int
	Seed    uint64
	// BatchSamples is the samples per batch; CollectUs the time a source takes to collect one;
	// ResendUs the time before an unacknowledged batch is sent again.
	BatchSamples        int
	CollectUs, ResendUs int64
	// Scheme, Workers and Epochs are the centre's training.
	Scheme  cop.Scheme
	Workers int
	Epochs  int
	// Verify also trains the serial reference on the canonical order at the centre and
	// compares the models.
	Verify bool
}

// paramNames are the parameters ParseParams knows.
var paramNames = []string{"dataset", "samples", "seed", "batch", "collect", "resend", "scheme", "workers", "epochs", "verify"}

// ParseParams parses p (dataset, samples, seed, batch, collect, resend, scheme, workers,
// epochs, verify; the defaults of the package's X5 runs where absent) for a deployment on dcs
// datacenters, which must be a centre and Sources sources (topology.COPFig61).
func ParseParams(p protocol.Params, dcs int) (Params, error) {
	if dcs != Sources+1 {
		return Params{}, fmt.Errorf("%s: a centre and %d sources run on %d datacenters (topology %s), not %d", ProtocolName, Sources, Sources+1, topology.COPFig61, dcs)
	}
	if err := p.CheckKnown(paramNames, nil); err != nil {
		return Params{}, fmt.Errorf("%s: %w", ProtocolName, err)
	}
	o := Params{Dataset: "kdd-like", Seed: 1}
	if s, ok := p["dataset"]; ok {
		o.Dataset = s
	}
	if s, ok := p["scheme"]; ok {
		scheme, err := cop.ParseScheme(s)
		if err != nil {
			return Params{}, fmt.Errorf("%s: parameter scheme: %w", ProtocolName, err)
		}
		o.Scheme = scheme
	} else {
		o.Scheme = cop.COP
	}
	seed, err := p.Int("seed", 1)
	o.Seed = uint64(seed)
	for _, e := range []error{err,
		set(&o.Samples, p.Int, "samples", 20_000), set(&o.BatchSamples, p.Int, "batch", 1_000),
		set(&o.Workers, p.Int, "workers", 2), set(&o.Epochs, p.Int, "epochs", svm.Epochs),
		set(&o.CollectUs, p.Duration, "collect", 100_000), set(&o.ResendUs, p.Duration, "resend", 500_000),
		set(&o.Verify, p.Bool, "verify", false)} {
		if e != nil {
			return Params{}, fmt.Errorf("%s: %w", ProtocolName, e)
		}
	}
	switch {
	case seed < 0:
		return Params{}, fmt.Errorf("%s: parameter seed %d: want at least 0", ProtocolName, seed)
	case o.Samples < Sources || o.BatchSamples < 1 || o.Workers < 1 || o.Epochs < 1:
		return Params{}, fmt.Errorf("%s: samples (at least %d), batch, workers and epochs must be positive", ProtocolName, Sources)
	case o.CollectUs < 0 || o.ResendUs <= 0:
		return Params{}, fmt.Errorf("%s: collect must be at least 0 and resend positive", ProtocolName)
	}
	if _, ok, err := dataset.Lookup(o.Dataset, dataset.Full); err != nil || !ok {
		return Params{}, fmt.Errorf("%s: parameter dataset %q is not a generator (kdd-like, kddb-like, imdb-like, hotspot:H)", ProtocolName, o.Dataset)
	}
	return o, nil
}

// set parses one parameter with parse into *v.
func set[T any](v *T, parse func(string, T) (T, error), key string, def T) error {
	var err error
	*v, err = parse(key, def)
	return err
}

// Shares generates the dataset o names and splits it among the sources.
func (o Params) Shares() ([]*dataset.Dataset, error) {
	shape, _, err := dataset.Lookup(o.Dataset, dataset.Full)
	if err != nil {
		return nil, err
	}
	d, _, err := shape.Shrunk(o.Samples).Generate(o.Seed, nil)
	if err != nil {
		return nil, err
	}
	return Shares(d, Sources)
}

// newReplica is the registry's factory: node 0 is the centre (with no admission log), node
// s+1 source s.
func newReplica(cfg protocol.Config, env protocol.Env) (protocol.Replica, error) {
	o, err := ParseParams(cfg.Params, cfg.Topology.N())
	if err != nil {
		return nil, err
	}
	if cfg.Self == CentreNode {
		return NewCentre(CentreConfig{Sources: Sources}, env)
	}
	shares, err := o.Shares()
	if err != nil {
		return nil, err
	}
	return newSource(o, shares, int(cfg.Self)-1, env)
}

// newSource returns source s of a deployment with parameters o.
func newSource(o Params, shares []*dataset.Dataset, s int, env protocol.Env) (*Source, error) {
	return NewSource(SourceConfig{Index: s, Share: shares[s], BatchSamples: o.BatchSamples, CollectUs: o.CollectUs, ResendUs: o.ResendUs}, env)
}

// Serve runs one node of the pipeline as a real process (registry.Entry.Serve, run by
// `meridian serve` on the nodes `meridian cluster up` starts): a source ships its batches until
// the centre has acknowledged all of them; the centre admits them into its admission log
// (DataDir/admitted.log), trains, checkpointing the model at every epoch barrier
// (DataDir/checkpoint), and reports the final model's hash. A restarted centre recovers the
// admitted batches from its log and resumes training after the last checkpointed epoch,
// re-running the current one. Both keep running, and answering resent batches, until ctx ends.
func Serve(ctx context.Context, node registry.ServeConfig) error {
	o, err := ParseParams(node.Config.Params, node.Config.Topology.N())
	if err != nil {
		return err
	}
	shares, err := o.Shares()
	if err != nil {
		return err
	}
	if node.Config.Self == CentreNode {
		return serveCentre(ctx, node, o, shares)
	}
	return serveSource(ctx, node, o, shares)
}

// serveSource runs source Self-1 until ctx ends.
func serveSource(ctx context.Context, node registry.ServeConfig, o Params, shares []*dataset.Dataset) error {
	s := int(node.Config.Self) - 1
	var src *Source
	drv, err := NewDriver(node.Config.Self, node.PeerAddrs, node.Config.Topology, func(env protocol.Env) (protocol.Replica, error) {
		var err error
		src, err = newSource(o, shares, s, env)
		return src, err
	})
	if err != nil {
		return err
	}
	err = drv.Run(ctx, func() bool {
		acked := src.Acked()
		switch {
		case src.Err() != nil:
			node.Report("failed: " + src.Err().Error())
		case src.Done():
			node.Report(fmt.Sprintf("done: %d batches (%d samples) shipped and acknowledged", acked, shares[s].Len()))
		default:
			node.Report(fmt.Sprintf("shipping: %d of %d batches acknowledged", acked, src.count))
		}
		return src.Err() != nil
	})
	if err == nil {
		err = src.Err()
	}
	return err
}

// serveCentre runs the central site until ctx ends.
func serveCentre(ctx context.Context, node registry.ServeConfig, o Params, shares []*dataset.Dataset) error {
	log, recovered, err := OpenFileLog(node.DataDir)
	if err != nil {
		return err
	}
	defer log.Close()
	var centre *Centre
	drv, err := NewDriver(CentreNode, node.PeerAddrs, node.Config.Topology, func(env protocol.Env) (protocol.Replica, error) {
		if centre, err = NewCentre(CentreConfig{Sources: Sources, Log: log.Append}, env); err != nil {
			return nil, err
		}
		return centre, centre.Recover(recovered)
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(node.Log, "centre: %d batches recovered from the admission log\n", len(recovered))
	total := 0
	for _, sh := range shares {
		total += batchCount(sh.Len(), o.BatchSamples)
	}
	complete := make(chan struct{})
	var once sync.Once
	served := make(chan error, 1)
	go func() { // keeps acknowledging resent batches while the centre trains, and after
		served <- drv.Run(ctx, func() bool {
			if centre.Complete() {
				once.Do(func() { close(complete) })
			} else {
				node.Report(fmt.Sprintf("collecting: %d of %d batches admitted", len(centre.Admitted()), total))
			}
			return false
		})
	}()
	select {
	case <-complete:
	case err := <-served:
		return err
	}
	var d *train.Data
	drv.Do(func() { d, err = centre.TrainingData() })
	if err != nil {
		return err
	}
	fmt.Fprintf(node.Log, "centre: %d batches admitted, %d samples, %.3f s after start\n", len(centre.Admitted()), d.Train.Len(), float64(centre.CompletedUs)/1e6)
	trained := make(chan error, 1)
	go func() { trained <- trainCentre(node, o, shares, d) }()
	select {
	case err := <-trained:
		if err != nil {
			node.Report("failed: " + err.Error())
			return err
		}
	case err := <-served:
		return err
	}
	return <-served
}

// trainCentre runs the centre's training on d, resuming after the last checkpoint in node.DataDir,
// and reports the result (with the serial reference's hash if o.Verify).
func trainCentre(node registry.ServeConfig, o Params, shares []*dataset.Dataset, d *train.Data) error {
	opts := train.Options{Epochs: o.Epochs, Lambda: svm.DefaultLambda, Checkpoint: func(c train.Checkpoint) error {
		if err := SaveCheckpoint(node.DataDir, c.Epoch, c.Params); err != nil {
			return err
		}
		node.Report(fmt.Sprintf("training: epoch %d of %d checkpointed", c.Epoch, o.Epochs))
		return nil
	}}
	epoch, params, err := LoadCheckpoint(node.DataDir)
	if err != nil {
		return err
	}
	if epoch > 0 && epoch < o.Epochs {
		fmt.Fprintf(node.Log, "centre: resuming after epoch %d\n", epoch)
		opts.Resume = &train.Checkpoint{Epoch: epoch, Params: params}
	}
	node.Report(fmt.Sprintf("training: epoch %d of %d", epoch+1, o.Epochs))
	start := time.Now()
	res, err := train.Run(d, o.Scheme, o.Workers, opts)
	if err != nil {
		return err
	}
	status := fmt.Sprintf("done: %s, %d workers, %.0f samples/s, accuracy %.4f, %.1f s, model sha256 %s",
		res.Scheme, res.Workers, res.SamplesPerSec, res.Accuracy, time.Since(start).Seconds(), res.ModelSHA256)
	if o.Verify {
		ref, err := SerialReference(shares, o.BatchSamples, train.Options{Epochs: o.Epochs, Lambda: svm.DefaultLambda})
		if err != nil {
			return err
		}
		same := ref.ModelSHA256 == res.ModelSHA256
		status += fmt.Sprintf(", serial reference %s, bit-identical %v", ref.ModelSHA256, same)
		if !same && o.Scheme.Serializable() {
			node.Report(status)
			return errors.New("the model differs from the serial reference")
		}
	}
	node.Report(status)
	return nil
}
