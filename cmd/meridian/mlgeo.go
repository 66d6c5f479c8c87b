package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/meridian-kv/meridian/ml/cop"
	"github.com/meridian-kv/meridian/ml/dataset"
	"github.com/meridian-kv/meridian/ml/geo"
	"github.com/meridian-kv/meridian/ml/svm"
	"github.com/meridian-kv/meridian/ml/train"
	"github.com/meridian-kv/meridian/protocol"
)

// mlGeoOptions are the flags of `meridian ml geo`: every site's, then the centre's.
type mlGeoOptions struct {
	addrs, dataset             string
	samples, batch             int
	seed                       uint64
	collect, resend            time.Duration
	dir, scheme                string
	workers, epochs            int
	verify                     bool
	failAfterBatches, failInEp int
	index                      int
	basePort                   int
}

const mlGeoLong = `Run COP's global-scale mode (spec cop.md §1.3 mode 1, Fig. 6.1) as real processes: four
collection sites (sources) each generate the same dataset, keep their quarter, cut it into
batches, plan every batch (Alg. 12) and ship batch and plan over TCP to the central site, which
admits the batches in a fixed round-robin order, transposes their plans (§4.3), acknowledges
each once it is in its admission log, and trains on the result. Messages between two sites are
held back by the one-way delay of Fig. 6.1's topology (central Ohio; Virginia, California,
Oregon, Montreal), so one machine emulates the WAN. A source resends every batch until it is
acknowledged; a restarted centre replays its admission log, and during training resumes from
the checkpoint of the last epoch barrier, re-running the current epoch.

--addrs lists the sites' addresses, the centre first. 'geo up' starts all five on this machine.`

func newMLGeoCmd(stdout, stderr io.Writer) *cobra.Command {
	var o mlGeoOptions
	cmd := &cobra.Command{
		Use:   "geo",
		Short: "the global-scale pipeline: collection sites ship planned batches to a central site",
		Long:  mlGeoLong,
		Example: `  meridian ml geo up --dir /tmp/geo --verify
  meridian ml geo centre --addrs 127.0.0.1:7400,127.0.0.1:7401,127.0.0.1:7402,127.0.0.1:7403,127.0.0.1:7404 --dir /tmp/geo
  meridian ml geo source --index 0 --addrs 127.0.0.1:7400,127.0.0.1:7401,127.0.0.1:7402,127.0.0.1:7403,127.0.0.1:7404`,
		Args: noArgs,
	}
	common := func(c *cobra.Command) {
		f := c.Flags()
		f.StringVar(&o.addrs, "addrs", "", "the sites' host:port, comma-separated, the centre first")
		f.StringVar(&o.dataset, "dataset", "kdd-like", "the generator every site runs (kdd-like, kddb-like, imdb-like, hotspot:H)")
		f.IntVar(&o.samples, "samples", 20_000, "training samples in all")
		f.Uint64Var(&o.seed, "seed", 1, "seed of the dataset")
		f.IntVar(&o.batch, "batch", 1_000, "samples per batch")
		f.DurationVar(&o.collect, "collect", 100*time.Millisecond, "time a source takes to collect one batch")
		f.DurationVar(&o.resend, "resend", 500*time.Millisecond, "time before an unacknowledged batch is sent again")
	}
	centreFlags := func(c *cobra.Command) {
		f := c.Flags()
		f.StringVar(&o.dir, "dir", "", "the centre's directory: admission log and checkpoint (required)")
		f.StringVar(&o.scheme, "scheme", "cop", "the scheme the centre trains with")
		f.IntVar(&o.workers, "workers", 2, "worker goroutines at the centre")
		f.IntVar(&o.epochs, "epochs", svm.Epochs, "epochs")
		f.BoolVar(&o.verify, "verify", false, "also train the serial reference on the canonical order and compare the models")
		f.IntVar(&o.failAfterBatches, "fail-after-batches", 0, "fault injection: exit abruptly once this many batches are logged, before acknowledging the last")
		f.IntVar(&o.failInEp, "fail-in-epoch", 0, "fault injection: exit abruptly at the end of this epoch, before its checkpoint")
	}
	source := &cobra.Command{Use: "source", Short: "run one collection site", Args: noArgs,
		RunE: func(*cobra.Command, []string) error { return runGeoSource(o, stdout) }}
	common(source)
	source.Flags().IntVar(&o.index, "index", 0, "the source's number, 0-based")
	centre := &cobra.Command{Use: "centre", Short: "run the central site", Args: noArgs,
		RunE: func(*cobra.Command, []string) error { return runGeoCentre(o, stdout) }}
	common(centre)
	centreFlags(centre)
	up := &cobra.Command{Use: "up", Short: "run the centre and four sources as processes on this machine", Args: noArgs,
		RunE: func(*cobra.Command, []string) error { return runGeoUp(o, stdout, stderr) }}
	common(up)
	centreFlags(up)
	up.Flags().IntVar(&o.basePort, "base-port", 7400, "the centre listens here, source i at base-port+1+i")
	cmd.AddCommand(source, centre, up)
	return cmd
}

// geoSetup parses the addresses and generates the sites' shares.
func geoSetup(o mlGeoOptions) ([]string, []*dataset.Dataset, error) {
	addrs := strings.Split(o.addrs, ",")
	if len(addrs) != geo.Sources+1 || o.batch < 1 || o.samples < geo.Sources {
		return nil, nil, usagef("ml geo: --addrs needs %d addresses, --batch and --samples positive", geo.Sources+1)
	}
	shape, ok, err := dataset.Lookup(o.dataset, dataset.Full)
	if err != nil || !ok {
		return nil, nil, usagef("ml geo: --dataset %q is not a generator", o.dataset)
	}
	shape = shape.Shrunk(o.samples)
	d, _, err := shape.Generate(o.seed, nil)
	if err != nil {
		return nil, nil, err
	}
	shares, err := geo.Shares(d, geo.Sources)
	return addrs, shares, err
}

// signalContext is cancelled by SIGINT or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func runGeoSource(o mlGeoOptions, stdout io.Writer) error {
	addrs, shares, err := geoSetup(o)
	if err != nil {
		return err
	}
	if o.index < 0 || o.index >= geo.Sources {
		return usagef("ml geo source: --index must be 0 to %d", geo.Sources-1)
	}
	var src *geo.Source
	drv, err := geo.NewDriver(geo.SourceNode(o.index), addrs, geo.Topology(), func(env protocol.Env) (protocol.Replica, error) {
		src, err = geo.NewSource(geo.SourceConfig{Index: o.index, Share: shares[o.index], BatchSamples: o.batch,
			CollectUs: o.collect.Microseconds(), ResendUs: o.resend.Microseconds()}, env)
		return src, err
	})
	if err != nil {
		return err
	}
	ctx, stop := signalContext()
	defer stop()
	if err := drv.Run(ctx, src.Done); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "source %d: %d samples shipped and acknowledged\n", o.index, shares[o.index].Len())
	return src.Err()
}

func runGeoCentre(o mlGeoOptions, stdout io.Writer) error {
	if o.dir == "" {
		return usagef("ml geo centre: --dir is required")
	}
	scheme, err := cop.ParseScheme(o.scheme)
	if err != nil {
		return usagef("ml geo centre: --scheme: %v", err)
	}
	addrs, shares, err := geoSetup(o)
	if err != nil {
		return err
	}
	log, recovered, err := geo.OpenFileLog(o.dir)
	if err != nil {
		return err
	}
	defer log.Close()
	logged := len(recovered)
	appendLog := func(b *geo.Batch) error {
		if err := log.Append(b); err != nil {
			return err
		}
		if logged++; logged == o.failAfterBatches {
			fmt.Fprintf(stdout, "failing after %d batches (--fail-after-batches)\n", logged)
			os.Exit(3)
		}
		return nil
	}
	var centre *geo.Centre
	drv, err := geo.NewDriver(geo.CentreNode, addrs, geo.Topology(), func(env protocol.Env) (protocol.Replica, error) {
		if centre, err = geo.NewCentre(geo.CentreConfig{Sources: geo.Sources, Log: appendLog}, env); err != nil {
			return nil, err
		}
		return centre, centre.Recover(recovered)
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "centre: %d batches recovered from the admission log\n", len(recovered))
	ctx, stop := signalContext()
	defer stop()
	complete := make(chan struct{})
	var once sync.Once
	served := make(chan error, 1)
	go func() { // keeps acknowledging resent batches while the centre trains
		served <- drv.Run(ctx, func() bool {
			if centre.Complete() {
				once.Do(func() { close(complete) })
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
	fmt.Fprintf(stdout, "centre: %d batches admitted, %d samples, %.3f s after start\n", len(centre.Admitted()), d.Train.Len(), float64(centre.CompletedUs)/1e6)
	opts := train.Options{Epochs: o.epochs, Lambda: svm.DefaultLambda, Checkpoint: func(c train.Checkpoint) error {
		if c.Epoch == o.failInEp {
			fmt.Fprintf(stdout, "failing in epoch %d before its checkpoint (--fail-in-epoch)\n", c.Epoch)
			os.Exit(3)
		}
		fmt.Fprintf(stdout, "epoch %d done\n", c.Epoch)
		return geo.SaveCheckpoint(o.dir, c.Epoch, c.Params)
	}}
	epoch, params, err := geo.LoadCheckpoint(o.dir)
	if err != nil {
		return err
	}
	if epoch > 0 && epoch < o.epochs {
		fmt.Fprintf(stdout, "centre: resuming after epoch %d\n", epoch)
		opts.Resume = &train.Checkpoint{Epoch: epoch, Params: params}
	}
	res, err := train.Run(d, scheme, o.workers, opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "centre: %s with %d workers: %.0f samples/s, accuracy %.4f, model sha256 %s\n",
		res.Scheme, res.Workers, res.SamplesPerSec, res.Accuracy, res.ModelSHA256)
	// A source whose acknowledgement was still on the wire when an earlier run of the centre
	// failed resends its batch; the centre answers for two resend intervals more before it exits.
	linger := time.After(2*o.resend + time.Second)
	defer func() { <-linger }()
	if o.verify {
		ref, err := geo.SerialReference(shares, o.batch, train.Options{Epochs: o.epochs, Lambda: svm.DefaultLambda})
		if err != nil {
			return err
		}
		same := ref.ModelSHA256 == res.ModelSHA256
		fmt.Fprintf(stdout, "centre: serial reference model sha256 %s: bit-identical %v\n", ref.ModelSHA256, same)
		if !same && scheme.Serializable() {
			return errors.New("the model differs from the serial reference")
		}
	}
	return nil
}

// runGeoUp starts the centre and the four sources as child processes of this binary and waits
// for them all.
func runGeoUp(o mlGeoOptions, stdout, stderr io.Writer) error {
	if o.dir == "" {
		return usagef("ml geo up: --dir is required")
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	var addrs []string
	for i := range geo.Sources + 1 {
		addrs = append(addrs, "127.0.0.1:"+strconv.Itoa(o.basePort+i))
	}
	common := []string{"--addrs", strings.Join(addrs, ","), "--dataset", o.dataset, "--samples", strconv.Itoa(o.samples),
		"--seed", strconv.FormatUint(o.seed, 10), "--batch", strconv.Itoa(o.batch), "--collect", o.collect.String(), "--resend", o.resend.String()}
	centreArgs := append([]string{"ml", "geo", "centre", "--dir", filepath.Clean(o.dir), "--scheme", o.scheme,
		"--workers", strconv.Itoa(o.workers), "--epochs", strconv.Itoa(o.epochs), "--verify=" + strconv.FormatBool(o.verify)}, common...)
	procs := []*exec.Cmd{exec.Command(exe, centreArgs...)}
	for i := range geo.Sources {
		procs = append(procs, exec.Command(exe, append([]string{"ml", "geo", "source", "--index", strconv.Itoa(i)}, common...)...))
	}
	for _, p := range procs {
		p.Stdout, p.Stderr = stdout, stderr
		if err := p.Start(); err != nil {
			return err
		}
	}
	var errs []error
	for i, p := range procs {
		if err := p.Wait(); err != nil {
			name := "centre"
			if i > 0 {
				name = fmt.Sprintf("source %d", i-1)
			}
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}
