// Package server runs one Meridian node: the same sans-IO protocol replica the simulator
// drives, here driven by the real clock, real timers and real sockets. A single event-loop
// goroutine owns the replica. Peer messages arrive over TCP (package wire framing, optional
// mutual TLS, optional WAN delay emulation), client requests over gRPC (package rpc); every input
// is recorded in a Pebble write-ahead log and made durable before any effect it caused leaves
// the node, and a restarted node replays that log to recover (see inputLog).
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/store"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/server/rpc"
)

// Node is one running replica with its listeners.
type Node struct {
	cfg     *cluster.Config
	self    protocol.NodeID
	logger  *slog.Logger
	opts    Options
	replica protocol.Replica
	// localReader is the replica if it serves some requests locally (protocol.LocalReader), else nil.
	localReader protocol.LocalReader
	env         *env
	codec       protocol.Codec
	opCodec     protocol.Codec // codec of client operations; nil unless the protocol serves operations
	// relayReplies: a reply with no waiting call here goes to the client's home node (relay.go).
	relayReplies bool
	log          *inputLog
	recordBuf    []byte // scratch for encoding input records (loop goroutine only)
	clientKey    []byte // the secret of client tokens (rpc.Backend.ClientKey), kept in the log's store
	inputs       chan input
	pending      map[replyKey]pendingReply
	submitted    submissions // the transactions handed to the replica for commit; loop goroutine only
	transport    *transport
	metrics      *metrics
	stopped      chan struct{}
	clientHop    time.Duration
	// skewUs is added to the wall clock the replica reads (/admin/skew); its readings never go
	// backwards, so a negative skew holds the replica's clock until the wall clock catches up.
	skewUs atomic.Int64

	// armed counts, per timer, the timers set and not yet fired (loop goroutine only): a restart
	// re-arms them.
	armed map[protocol.TimerID]int
	// lastCheckpointBytes is the size of the newest checkpoint (see checkpointDue), and
	// segmentFrom the store versions its segments hold. storeRecords: the replica prunes its
	// store (protocol.PrunesStore), which is kept one record per version instead of in segments;
	// deleteSegments: it was restored from segments, which the next checkpoint deletes.
	lastCheckpointBytes int64
	segmentFrom         int
	storeRecords        bool
	deleteSegments      bool

	idMu           sync.Mutex
	nextID, idsEnd uint32
}

// grpcStreamWorkers is how many long-lived goroutines serve client RPCs. A handler waits for
// the event loop's answer, so each outstanding request holds one; gRPC starts a goroutine of its
// own for a request that finds every worker busy. Reusing goroutines spares each request a new
// goroutine whose stack grows, by copying, to the depth of a gRPC handler (about 8% of a node's
// CPU under load without them).
const grpcStreamWorkers = 128

// Options are a node's optional settings; the zero value is the default.
type Options struct {
	// StorageLog also logs the storage engine's (Pebble's) informational lines and events —
	// WAL recovery, WAL files, flushes, compactions — at info level. Without it Pebble logs
	// only its errors, at error level.
	StorageLog bool
}

// New builds node name of cfg, which logs to logger: it checks the configuration and builds the
// replica, but opens nothing yet.
func New(cfg *cluster.Config, name string, logger *slog.Logger, opts Options) (*Node, error) {
	index, _, err := cfg.Node(name)
	if err != nil {
		return nil, err
	}
	entry, err := registry.Lookup(cfg.Protocol)
	if err != nil {
		return nil, err
	}
	if entry.Codec == nil {
		return nil, fmt.Errorf("protocol %s has no wire codec", cfg.Protocol)
	}
	n := &Node{
		cfg:       cfg,
		self:      protocol.NodeID(index),
		logger:    logger.With("node", name),
		opts:      opts,
		codec:     entry.Codec,
		inputs:    make(chan input, 4096),
		pending:   map[replyKey]pendingReply{},
		submitted: submissions{},
		armed:     map[protocol.TimerID]int{},
		stopped:   make(chan struct{}),
		clientHop: time.Duration(cfg.ClientHopUs) * time.Microsecond,
	}
	n.env = &env{
		wallUs: func() int64 { return time.Now().UnixMicro() + n.skewUs.Load() },
		store:  store.New(),

		recordVersions: !cfg.NoVersionRecord,
	}
	n.env.pcg, n.env.rand = newRandSource(index)
	pc := protocol.Config{Self: n.self, Nodes: cfg.Placements(), Topology: cfg.Topology, Params: cfg.Params}
	if n.replica, err = entry.New(pc, n.env); err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Protocol, err)
	}
	n.localReader, _ = n.replica.(protocol.LocalReader)
	n.storeRecords = protocol.Checkpoints(n.replica) && protocol.PrunesStore(n.replica)
	if entry.ServesOperations() {
		n.opCodec = entry.Codec
	}
	n.relayReplies = entry.RepliesElsewhere
	n.metrics = newMetrics(func() *transport { return n.transport })
	return n, nil
}

// Run recovers the node from its data directory, serves peers, clients and metrics, and runs
// the event loop until ctx ends or a fatal error (a failed disk write) occurs.
func (n *Node) Run(ctx context.Context) error {
	me := n.cfg.Nodes[n.self]
	dir := n.cfg.NodeDataDir(int(n.self))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var err error
	openStart := time.Now()
	if n.log, err = openInputLog(dir, n.cfg.Durability != "none", n.logger, n.opts.StorageLog); err != nil {
		return err
	}
	defer n.log.close()
	n.env.disk.db = n.log.db
	if n.clientKey, err = n.log.clientKey(); err != nil {
		return err
	}
	rec := recovery{openMs: time.Since(openStart).Milliseconds()}
	if err := n.recover(&rec); err != nil {
		return err
	}
	n.logger.Info("recovered", "checkpoint", rec.fromCheckpoint, "checkpoint_inputs", rec.checkpoint.next, "inputs", rec.replayed,
		"versions", n.env.store.Versions(), "ms", time.Since(openStart).Milliseconds(), "open_ms", rec.openMs, "segments_ms", rec.segmentsMs,
		"replica_ms", rec.replicaMs, "replay_ms", rec.replayMs, "data_dir", dir)
	if !protocol.Checkpoints(n.replica) {
		n.logger.Warn("the protocol writes no checkpoints: the input log keeps every input, and a restart replays them all", "protocol", n.cfg.Protocol)
	}

	peerTLS, clientCreds, err := n.tlsConfigs()
	if err != nil {
		return err
	}
	peerLn, err := net.Listen("tcp", me.PeerAddr)
	if err != nil {
		return fmt.Errorf("listen for peers on %s: %w", me.PeerAddr, err)
	}
	clientLn, err := net.Listen("tcp", me.ClientAddr)
	if err != nil {
		peerLn.Close()
		return fmt.Errorf("listen for clients on %s: %w", me.ClientAddr, err)
	}
	metricsLn, err := net.Listen("tcp", me.MetricsAddr)
	if err != nil {
		peerLn.Close()
		clientLn.Close()
		return fmt.Errorf("listen for metrics on %s: %w", me.MetricsAddr, err)
	}
	if peerTLS != nil {
		// HTTPS with the node's certificate; a client certificate is asked for, and required by
		// the endpoints that reveal data (see httpHandler).
		metricsTLS := peerTLS.Clone()
		metricsTLS.ClientAuth = tls.VerifyClientCertIfGiven
		metricsLn = tls.NewListener(metricsLn, metricsTLS)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	n.transport = newTransport(n, peerLn, peerTLS)
	n.transport.start(ctx, &wg)

	grpcOpts := []grpc.ServerOption{grpc.NumStreamWorkers(grpcStreamWorkers)}
	if clientCreds != nil {
		grpcOpts = append(grpcOpts, grpc.Creds(clientCreds))
	}
	grpcServer := grpc.NewServer(grpcOpts...)
	rpc.Register(grpcServer, n, rpc.Limits{})
	go grpcServer.Serve(clientLn)

	var ready atomic.Bool
	httpServer := &http.Server{Handler: n.httpHandler(&ready), ReadHeaderTimeout: 5 * time.Second}
	go httpServer.Serve(metricsLn)

	if !rec.fromCheckpoint && rec.replayed == 0 {
		n.inputs <- input{kind: inStart}
	}
	for id, count := range n.armed {
		for range count {
			n.armTimer(0, id)
		}
	}
	ready.Store(true)
	n.logger.Info("serving", "peers", me.PeerAddr, "clients", me.ClientAddr, "metrics", me.MetricsAddr)
	loopErr := n.run(ctx)

	ready.Store(false)
	close(n.stopped)
	cancel()
	peerLn.Close()
	grpcServer.Stop()
	shutdownCtx, done := context.WithTimeout(context.Background(), 2*time.Second)
	httpServer.Shutdown(shutdownCtx)
	done()
	wg.Wait()
	n.failPending()
	return loopErr
}

// failPending answers every request still waiting when the node stops: those the replica holds
// and those still queued for the loop.
func (n *Node) failPending() {
	for key, p := range n.pending {
		p.reply(protocol.Reply{Client: key.client, Seq: key.seq, Err: "node stopped before deciding; the outcome is unknown"}, nil)
	}
	clear(n.pending)
	for {
		select {
		case in := <-n.inputs:
			if in.kind == inRequest && in.reply != nil {
				in.reply(protocol.Reply{Client: in.req.Client, Seq: in.req.Seq, Err: "node is shutting down"}, nil)
			}
		default:
			return
		}
	}
}

// NewClientID hands out a client id unique across the cluster and restarts (rpc.Backend).
func (n *Node) NewClientID() (txn.ClientID, error) {
	n.idMu.Lock()
	defer n.idMu.Unlock()
	if n.nextID == n.idsEnd {
		const block = 1024
		first, err := n.log.allocateClientIDs(int(n.self), block)
		if err != nil {
			return 0, err
		}
		n.nextID, n.idsEnd = first, first+block
	}
	id := n.nextID
	n.nextID++
	return txn.ClientID(id), nil
}

// ClientKey returns the secret key of the node's client tokens (rpc.Backend): drawn when the
// node first ran and kept in its data directory, so that a client proves its id after a restart.
func (n *Node) ClientKey() []byte { return n.clientKey }

// AdoptClientID accepts an id that another node allocated, registered here with that node's
// token (rpc.Backend), only where a client legitimately uses it: a client of a partitioned
// protocol uses its home node's id at every partition of its datacenter. Ids carry their
// allocator's index (see inputLog.allocateClientIDs). The node's own ids take the token it
// issued, and the client of a fully replicated protocol uses only the node that registered it,
// so that each transaction id reaches one node, whose event loop refuses it a second time.
func (n *Node) AdoptClientID(id txn.ClientID) error {
	owner := int(id>>24) - 1
	switch {
	case owner < 0 || owner >= len(n.cfg.Nodes):
		return fmt.Errorf("no node of the cluster allocates it (its allocator would be node %d of %d)", owner, len(n.cfg.Nodes))
	case owner == int(n.self):
		return errors.New("this node allocated it, and only the token it issued proves it")
	case n.opCodec == nil:
		return fmt.Errorf("node %s allocated it, and a client of %s uses only the node that registered it", n.cfg.Nodes[owner].Name, n.cfg.Protocol)
	case n.cfg.Nodes[owner].DCIndex != n.cfg.Nodes[n.self].DCIndex:
		return fmt.Errorf("node %s of datacenter %s allocated it, and a client uses only the partitions of its own datacenter",
			n.cfg.Nodes[owner].Name, n.cfg.Nodes[owner].DC)
	}
	return nil
}

// OpCodec returns the protocol's codec if it serves operations (registry.Entry.ServesOperations:
// a partitioned protocol or a shared log, whose client library sends protocol.Operation
// requests), nil otherwise (rpc.Backend).
func (n *Node) OpCodec() protocol.Codec { return n.opCodec }

// Submit hands a client request to the event loop (rpc.Backend), which refuses one naming a
// transaction its client already submitted for commit (see submissions). With an emulated client
// hop the request and its reply each wait that long.
func (n *Node) Submit(req protocol.Request, reply func(protocol.Reply, error)) {
	deliver := func() {
		in := input{kind: inRequest, req: req, atUs: time.Now().UnixMicro(), reply: reply}
		if n.clientHop > 0 {
			in.reply = func(r protocol.Reply, err error) { time.AfterFunc(n.clientHop, func() { reply(r, err) }) }
		}
		select {
		case n.inputs <- in:
		case <-n.stopped:
			reply(protocol.Reply{Client: req.Client, Seq: req.Seq, Err: "node is shutting down"}, nil)
		}
	}
	if n.clientHop > 0 {
		time.AfterFunc(n.clientHop, deliver)
		return
	}
	deliver()
}

// tlsConfigs builds mutual-TLS settings from the cluster file: peers must present a
// certificate signed by the cluster CA, for the replica transport and for clients alike. The
// node's own certificate must name it (cluster.Config.NodeURI), as its peers will check.
func (n *Node) tlsConfigs() (*tls.Config, credentials.TransportCredentials, error) {
	if n.cfg.TLS == nil {
		return nil, nil, nil
	}
	me := n.cfg.Nodes[n.self]
	pool, err := cluster.LoadCA(n.cfg.TLS.CA)
	if err != nil {
		return nil, nil, err
	}
	cert, err := tls.LoadX509KeyPair(me.Cert, me.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("tls: node %s: %w", me.Name, err)
	}
	if err := n.cfg.CheckNodeCert(cert.Leaf, int(n.self)); err != nil {
		return nil, nil, fmt.Errorf("tls: node %s: %s: %w", me.Name, me.Cert, err)
	}
	conf := &tls.Config{
		Certificates: []tls.Certificate{cert},
		RootCAs:      pool,
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS13,
	}
	return conf, credentials.NewTLS(conf), nil
}
