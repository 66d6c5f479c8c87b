// Package cluster describes a networked Meridian deployment in one YAML file, the cluster file,
// and starts and stops local clusters made of one server process per node (the tooling behind
// `meridian cluster up`, `down` and `status`). Every server of a cluster reads the same file and
// picks its own entry with `meridian serve --config FILE --node NAME`.
//
// # File format
//
//	name: demo                       # cluster name, checked in the peer handshake
//	protocol: helios-0               # a registered protocol (meridian protocols)
//	params: {interval: 10ms}         # protocol parameters (protocol.Params), optional
//	topology: table4.1               # preset name or YAML/JSON topology file: the datacenters and RTTs
//	wan_emulation: true              # delay every peer message by its link's RTT/2 + jitter (in-process)
//	admin: false                     # serve the nemesis endpoints /admin/cut, /admin/heal, /admin/skew
//	jitter: 1                        # scale of the topology's std devs when emulating (default 1)
//	jitter_correlation: 100ms        # correlation time of each link's jitter (default 100ms; 0: independent draws)
//	client_hop: 500us                # emulated client→node one-way delay (default 0)
//	durability: sync                 # sync (fsync before any output leaves; the default) or none
//	data_dir: data                   # base directory (default "data"); node data in <data_dir>/<node name>
//	checkpoint_bytes: 1048576        # input logged between checkpoints, at least (default 1 MiB; -1: never)
//	record_versions: false           # TCC protocols: do not record every version's order for /versions (default true)
//	tls:                             # optional mutual TLS, between nodes and with clients (see below)
//	  ca: certs/ca.pem
//	nodes:
//	  - name: A                      # ASCII letters, digits, '-' and '_'; unique
//	    dc: A                        # a datacenter of the topology
//	    partition: 0                 # key-space partition (default 0; partitioned protocols only)
//	    peer_addr: 127.0.0.1:7101    # replica-to-replica TCP
//	    client_addr: 127.0.0.1:7201  # client gRPC service
//	    metrics_addr: 127.0.0.1:7301 # HTTP: /metrics (Prometheus), /healthz and /status
//	    cert: certs/A.pem            # its certificate (naming meridian://demo/A) and key; with tls
//	    key: certs/A-key.pem
//	    data_dir: data/A             # optional; overrides <data_dir>/<node name>
//	  - name: B
//	    dc: B
//	    peer_addr: 127.0.0.1:7102
//	    client_addr: 127.0.0.1:7202
//	    metrics_addr: 127.0.0.1:7302
//	    cert: certs/B.pem
//	    key: certs/B-key.pem
//	  - name: C
//	    dc: C
//	    peer_addr: 127.0.0.1:7103
//	    client_addr: 127.0.0.1:7203
//	    metrics_addr: 127.0.0.1:7303
//	    cert: certs/C.pem
//	    key: certs/C-key.pem
//
// Durations are Go durations ("10ms", "500us"). Relative paths (the topology file, the
// certificates, the data directories) are relative to the cluster file's directory; Load and
// Parse store them as absolute paths. A topology name that is a preset ("table4.1", "aws-mf",
// "aws-helios") is the preset even if a file of that name exists.
//
// Load rejects unknown fields, a missing name, protocol, topology or node list, an unknown
// protocol, an invalid topology, node names that are empty, repeated or contain other characters,
// a dc that is not a datacenter of the topology, a negative partition, missing or malformed
// addresses (host:port with a port in 1..65535), an address used twice (by any nodes, for any
// purpose), two nodes sharing a data directory, a durability other than sync or none, a negative
// jitter, jitter_correlation or client_hop, tls without a ca, tls with a node lacking its cert or
// key (or a cert or key without tls), tls with a cluster name other than ASCII letters, digits,
// '-' and '_', a datacenter of the topology without any node, and a placement the protocol cannot
// run: a partitioned protocol (the transactional-causal family, whose registry entry has a client
// library) needs the same partitions 0..N-1 in every datacenter, one node each; the others need
// exactly one node per datacenter, with partition 0 — except a read-write protocol that places
// read-only nodes beside its replicas (registry.Entry.Nodes: Ogre with rot_units, which
// `cluster up` sets from registry.Entry.DeployParams and places with GenerateNodes), whose nodes
// must be exactly that placement.
// Every error is one line naming the file and the entry at fault, for example
//
//	cluster.yaml: nodes[2] (C): peer_addr "127.0.0.1" is not host:port
//
// Nodes are numbered in file order: node i of Nodes is protocol.NodeID(i) (see Placements).
//
// # Mutual TLS
//
// With tls, every node presents its certificate on the replica transport and the client port,
// and accepts only certificates signed by the CA, from peers and clients alike. A node's
// certificate must also name it: it carries the URI subject alternative name
// meridian://CLUSTER/NODE (Config.NodeURI; meridian://demo/A above), besides the hosts of the
// node's addresses (IP addresses or DNS names) that peers and clients dial. A node refuses to
// start with a certificate that does not name it. On every accepted peer connection the node the
// peer's hello claims to be must be the one its verified certificate names; otherwise the
// connection is closed and logged, and nothing it sent reaches the replica. A node dialing a
// peer likewise refuses a server whose certificate does not name the node it meant to reach. A
// client certificate needs no name, and one that names no node cannot pose as one. The cluster
// name goes into the certificates, hence its stricter form with tls. The metrics address then
// speaks HTTPS with the node's certificate: /metrics, /healthz and /status answer anyone, while
// /versions (the data's version order) and the profiler (/debug/pprof/) answer only a client
// presenting a certificate signed by the CA. Up, StartNode and Status check, like a peer, that
// the certificate a node presents there names it (Prober), and Up fails at once, naming the
// node, if it does not.
//
// GenerateTLS (`meridian cluster up --tls`) makes such certificates for a local cluster in
// DIR/tls: a new CA (ca.pem; its key is not kept), a certificate per node naming it
// (node-NAME.pem, node-NAME-key.pem) and a client certificate for benches and clients
// (client.pem, client-key.pem); ECDSA P-256, valid for a year.
//
// # Local clusters
//
// Generate makes the file of a local cluster: one node per datacenter on 127.0.0.1 with
// consecutive ports and WAN emulation on (GeneratePartitioned: N nodes per datacenter, one per
// partition; GeneratePerSite: several full replicas per site, on a topology file it writes;
// GenerateTLS adds mutual TLS). Up writes it to DIR/cluster.yaml and starts one
// detached process per node (logs in DIR/logs/NAME.log, pids in DIR/pids/NAME.pid), waiting until
// every node's /healthz answers; Status reports each node's process, health and /status report;
// Down stops them.
package cluster
