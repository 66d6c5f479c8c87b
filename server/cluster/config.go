package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/meridian-kv/meridian/internal/strictyaml"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/partitioned"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/protocols/tcc"
	"github.com/meridian-kv/meridian/topology"
)

// DefaultCheckpointBytes is how much input a node logs, at least, between two checkpoints unless
// the cluster file's checkpoint_bytes says otherwise.
const DefaultCheckpointBytes = 1 << 20

// Durability modes of the cluster file's durability field.
const (
	// DurabilitySync makes a node fsync its log before any output that depends on it leaves
	// the process. It is the default.
	DurabilitySync = "sync"
	// DurabilityNone never fsyncs: a crashed node may lose state it already acted on.
	DurabilityNone = "none"
)

// Config is a parsed and validated cluster file. Paths are absolute.
type Config struct {
	// Path is the cluster file's absolute path; relative paths in it resolve against its
	// directory.
	Path string
	// Name is the cluster's name; peers refuse a handshake from another cluster.
	Name string
	// Protocol is a registry name, e.g. "helios-0".
	Protocol string
	// Params are the protocol's parameters; nil if none.
	Params protocol.Params
	// Topology gives the datacenters and the RTTs between them.
	Topology *topology.Topology
	// TopologyRef is the topology as the file names it: a preset name or an absolute path.
	TopologyRef string
	// WANEmulation delays every peer message by its link's RTT/2 plus jitter, in process.
	WANEmulation bool
	// Admin makes every node serve the fault-injection endpoints of the nemesis on its metrics
	// address (/admin/cut, /admin/heal, /admin/skew; `meridian cluster up --admin`). Off by
	// default: whoever reaches them can cut a node off or move its clock. Under TLS they answer
	// only clients with a certificate from the cluster CA.
	Admin bool
	// Jitter scales the topology's standard deviations when emulating (default 1).
	Jitter float64
	// JitterCorrelationUs is the correlation time of each emulated link's jitter
	// (topology.JitterProcess; default topology.DefaultJitterCorrelationUs, as in the
	// simulator); 0 draws every message's jitter independently.
	JitterCorrelationUs int64
	// ClientHopUs is the emulated one-way client→node delay in microseconds (default 0).
	ClientHopUs int64
	// Durability is DurabilitySync or DurabilityNone.
	Durability string
	// DataDir is the base data directory; see NodeDataDir.
	DataDir string
	// CheckpointBytes is how much input a node logs, at least, between two checkpoints of its
	// replica (see server.Node): 0 means DefaultCheckpointBytes, a negative value never.
	CheckpointBytes int64
	// NoVersionRecord stops the nodes of the causal (TCC) protocols recording every version's
	// place in its key's order (tcc.VersionLog), which their /versions endpoint reports and
	// `bench --cluster` and the nemesis check convergence and causality with; their /versions
	// then answers 409. The record is one small Pebble key per version written (not its value),
	// so it grows with the run however the store is pruned: a node left running without checked
	// benches may switch it off (record_versions: false) to keep its data directory bounded by
	// its live versions. Other protocols' /versions is their store's order and needs no record.
	NoVersionRecord bool
	// TLS enables mutual TLS between nodes if not nil.
	TLS *TLS
	// Nodes are the cluster's nodes; node i is protocol.NodeID(i).
	Nodes []Node
}

// Node is one server process of a cluster.
type Node struct {
	// Name identifies the node (meridian serve --node NAME): ASCII letters, digits, '-', '_'.
	Name string
	// DC is the node's datacenter, DCIndex its index in the topology's DCs.
	DC      string
	DCIndex int
	// Partition is the key-space partition the node serves (0 for full replicas).
	Partition int
	// PeerAddr is the host:port of the replica-to-replica TCP listener.
	PeerAddr string
	// ClientAddr is the host:port of the client gRPC service.
	ClientAddr string
	// MetricsAddr is the host:port of the HTTP server with /metrics, /healthz and /status.
	MetricsAddr string
	// DataDir overrides the node's data directory if not empty (see Config.NodeDataDir).
	DataDir string
	// Cert and Key are the node's TLS certificate and private key (PEM), set when TLS is.
	Cert, Key string
}

// TLS configures mutual TLS between the nodes.
type TLS struct {
	// CA is the PEM file of the certificate authority that signed every node's certificate.
	CA string
}

// file is the on-disk form of a cluster file, for decoding.
type file struct {
	Name         string               `yaml:"name"`
	Protocol     string               `yaml:"protocol"`
	Params       map[string]yaml.Node `yaml:"params"`
	Topology     string               `yaml:"topology"`
	WANEmulation bool                 `yaml:"wan_emulation"`
	Admin        bool                 `yaml:"admin"`
	Jitter       *float64             `yaml:"jitter"` // nil: default 1
	JitterCorr   string               `yaml:"jitter_correlation"`
	ClientHop    string               `yaml:"client_hop"`
	Durability   string               `yaml:"durability"`
	DataDir      string               `yaml:"data_dir"`
	Checkpoint   int64                `yaml:"checkpoint_bytes"`
	Record       *bool                `yaml:"record_versions"`
	TLS          *tlsFile             `yaml:"tls"`
	Nodes        []nodeFile           `yaml:"nodes"`
}

// outFile is the on-disk form for encoding, in the documented order.
type outFile struct {
	Name         string            `yaml:"name"`
	Protocol     string            `yaml:"protocol"`
	Params       map[string]string `yaml:"params,omitempty"`
	Topology     string            `yaml:"topology"`
	WANEmulation bool              `yaml:"wan_emulation"`
	Admin        bool              `yaml:"admin,omitempty"`
	Jitter       float64           `yaml:"jitter"`
	JitterCorr   string            `yaml:"jitter_correlation"`
	ClientHop    string            `yaml:"client_hop,omitempty"`
	Durability   string            `yaml:"durability,omitempty"`
	DataDir      string            `yaml:"data_dir,omitempty"`
	Checkpoint   int64             `yaml:"checkpoint_bytes,omitempty"`
	Record       *bool             `yaml:"record_versions,omitempty"`
	TLS          *tlsFile          `yaml:"tls,omitempty"`
	Nodes        []nodeFile        `yaml:"nodes"`
}

type tlsFile struct {
	CA string `yaml:"ca"`
}

type nodeFile struct {
	Name        string `yaml:"name"`
	DC          string `yaml:"dc"`
	Partition   int    `yaml:"partition,omitempty"`
	PeerAddr    string `yaml:"peer_addr"`
	ClientAddr  string `yaml:"client_addr"`
	MetricsAddr string `yaml:"metrics_addr"`
	Cert        string `yaml:"cert,omitempty"`
	Key         string `yaml:"key,omitempty"`
	DataDir     string `yaml:"data_dir,omitempty"`
}

// Load reads and validates the cluster file at path.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cluster file: %w", err)
	}
	return Parse(path, data)
}

// Parse validates data as the contents of the cluster file at path; relative paths in it
// resolve against path's directory. Errors are single lines starting with path.
func Parse(path string, data []byte) (*Config, error) {
	c, err := parse(path, data)
	if err != nil {
		prefix := path
		if prefix == "" {
			prefix = "cluster file"
		}
		return nil, fmt.Errorf("%s: %w", prefix, err)
	}
	return c, nil
}

func parse(path string, data []byte) (*Config, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	var f file
	if err := decodeYAML(data, &f); err != nil {
		return nil, err
	}
	p := parser{dir: filepath.Dir(abs)}
	c := &Config{
		Path:         abs,
		Name:         f.Name,
		Protocol:     f.Protocol,
		WANEmulation: f.WANEmulation,
		Admin:        f.Admin,
		Jitter:       1,
		Durability:   DurabilitySync,
		DataDir:      p.resolve("data"),

		JitterCorrelationUs: topology.DefaultJitterCorrelationUs,
		CheckpointBytes:     f.Checkpoint,
		NoVersionRecord:     f.Record != nil && !*f.Record,
	}
	switch {
	case f.Name == "":
		return nil, errors.New("missing name")
	case !utf8.ValidString(f.Name) || strings.ContainsFunc(f.Name, unicode.IsControl):
		return nil, fmt.Errorf("name %q: control characters or invalid UTF-8", f.Name)
	case f.Protocol == "":
		return nil, errors.New("missing protocol")
	case f.Topology == "":
		return nil, errors.New("missing topology")
	}
	if _, err := registry.Lookup(f.Protocol); err != nil {
		return nil, fmt.Errorf("unknown protocol %q (known: %s)", f.Protocol, strings.Join(registry.Names(), ", "))
	}
	if c.Params, err = params(f.Params); err != nil {
		return nil, err
	}
	c.TopologyRef = f.Topology
	if _, preset := topology.Preset(f.Topology); !preset {
		switch strings.ToLower(filepath.Ext(f.Topology)) {
		case ".yaml", ".yml", ".json":
			c.TopologyRef = p.resolve(f.Topology)
		} // anything else is an error of topology.Load, naming it as written
	}
	if c.Topology, _, err = topology.Load(c.TopologyRef); err != nil {
		return nil, err // topology.Load's errors start with "topology"
	}
	if f.Jitter != nil {
		if j := *f.Jitter; j < 0 || math.IsNaN(j) || math.IsInf(j, 0) {
			return nil, fmt.Errorf("jitter %g: want a finite number ≥ 0", j)
		}
		c.Jitter = *f.Jitter
	}
	if f.JitterCorr != "" {
		d, err := time.ParseDuration(f.JitterCorr)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("jitter_correlation %q: want a non-negative duration (e.g. 100ms; 0 for independent draws)", f.JitterCorr)
		}
		c.JitterCorrelationUs = d.Microseconds()
	}
	if f.ClientHop != "" {
		d, err := time.ParseDuration(f.ClientHop)
		switch {
		case err != nil:
			return nil, fmt.Errorf("client_hop %q is not a duration (e.g. 500us)", f.ClientHop)
		case d < 0:
			return nil, fmt.Errorf("client_hop %q is negative", f.ClientHop)
		}
		c.ClientHopUs = d.Microseconds()
	}
	switch f.Durability {
	case "":
	case DurabilitySync, DurabilityNone:
		c.Durability = f.Durability
	default:
		return nil, fmt.Errorf("durability %q: want %s or %s", f.Durability, DurabilitySync, DurabilityNone)
	}
	if f.DataDir != "" {
		c.DataDir = p.resolve(f.DataDir)
	}
	if f.TLS != nil {
		if f.TLS.CA == "" {
			return nil, errors.New("tls: missing ca")
		}
		if err := checkTLSName(f.Name); err != nil {
			return nil, err
		}
		c.TLS = &TLS{CA: p.resolve(f.TLS.CA)}
	}
	if len(f.Nodes) == 0 {
		return nil, errors.New("missing nodes")
	}
	if err := p.nodes(c, f.Nodes); err != nil {
		return nil, err
	}
	return c, nil
}

// parser carries the state of one Parse.
type parser struct {
	dir string // the cluster file's absolute directory
}

// resolve makes a path from the file absolute.
func (p parser) resolve(path string) string {
	if path == "" {
		return ""
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(p.dir, path)
	}
	return filepath.Clean(path)
}

// nodes validates the node entries and appends them to c.Nodes.
func (p parser) nodes(c *Config, nodes []nodeFile) error {
	names := map[string]int{}
	addrs := map[string]string{}    // normalized address → its owner, e.g. "nodes[0] (A)'s peer_addr"
	dataDirs := map[string]string{} // effective data dir → its owner
	hasNode := make([]bool, c.Topology.N())
	for i, nf := range nodes {
		entry := fmt.Sprintf("nodes[%d]", i)
		if nf.Name == "" {
			return fmt.Errorf("%s: missing name", entry)
		}
		if !validName(nf.Name) {
			return fmt.Errorf("%s: invalid name %q (use ASCII letters, digits, '-' and '_')", entry, nf.Name)
		}
		entry = fmt.Sprintf("%s (%s)", entry, nf.Name)
		if j, dup := names[nf.Name]; dup {
			return fmt.Errorf("%s: duplicate name (also nodes[%d])", entry, j)
		}
		names[nf.Name] = i
		n := Node{
			Name:        nf.Name,
			DC:          nf.DC,
			Partition:   nf.Partition,
			PeerAddr:    nf.PeerAddr,
			ClientAddr:  nf.ClientAddr,
			MetricsAddr: nf.MetricsAddr,
			DataDir:     p.resolve(nf.DataDir),
			Cert:        p.resolve(nf.Cert),
			Key:         p.resolve(nf.Key),
		}
		var ok bool
		switch n.DCIndex, ok = c.Topology.Index(nf.DC); {
		case nf.DC == "":
			return fmt.Errorf("%s: missing dc", entry)
		case !ok:
			return fmt.Errorf("%s: dc %q is not a datacenter of topology %s (%s)",
				entry, nf.DC, c.Topology.Name, strings.Join(c.Topology.DCs, ", "))
		case nf.Partition < 0:
			return fmt.Errorf("%s: negative partition %d", entry, nf.Partition)
		}
		hasNode[n.DCIndex] = true
		for _, a := range []struct{ key, addr string }{
			{"peer_addr", n.PeerAddr}, {"client_addr", n.ClientAddr}, {"metrics_addr", n.MetricsAddr},
		} {
			norm, err := checkAddr(a.addr)
			if err != nil {
				return fmt.Errorf("%s: %s%s", entry, a.key, err)
			}
			if owner, dup := addrs[norm]; dup {
				return fmt.Errorf("%s: %s %q is already %s", entry, a.key, a.addr, owner)
			}
			addrs[norm] = fmt.Sprintf("%s's %s", entry, a.key)
		}
		switch {
		case c.TLS != nil && n.Cert == "":
			return fmt.Errorf("%s: missing cert (tls is set)", entry)
		case c.TLS != nil && n.Key == "":
			return fmt.Errorf("%s: missing key (tls is set)", entry)
		case c.TLS == nil && (n.Cert != "" || n.Key != ""):
			return fmt.Errorf("%s: cert and key need tls (tls: {ca: FILE})", entry)
		}
		c.Nodes = append(c.Nodes, n)
		dd := c.NodeDataDir(len(c.Nodes) - 1)
		if owner, dup := dataDirs[dd]; dup {
			return fmt.Errorf("%s: data directory %s is also %s's", entry, dd, owner)
		}
		dataDirs[dd] = entry
	}
	for dc, ok := range hasNode {
		if !ok {
			return fmt.Errorf("datacenter %s of topology %s has no node", c.Topology.DCs[dc], c.Topology.Name)
		}
	}
	return checkLayout(c)
}

// checkLayout checks the nodes' placement against the protocol: a partitioned protocol (one with
// a client library, registry.Entry.NewClient) runs the same partitions 0..N-1 in every
// datacenter, one node each (tcc.NewLayout); a partitioned read-write one (S-DUR) runs
// partitions 0..P-1 with the same number of replicas each, anywhere (partitioned.NewPlacement);
// the others run exactly one full replica, partition 0, per datacenter.
func checkLayout(c *Config) error {
	entry, err := registry.Lookup(c.Protocol)
	if err != nil {
		return err
	}
	if entry.Family == registry.PartitionedReadWrite {
		if _, err := partitioned.NewPlacement(c.Placements(), c.Topology.N()); err != nil {
			return fmt.Errorf("protocol %s places P partitions of R replicas each: %w", c.Protocol, err)
		}
		return nil
	}
	if entry.Nodes != nil {
		want, err := entry.Nodes(c.Params, c.Topology.N())
		if err != nil {
			return err
		}
		if want != nil {
			if !slices.Equal(c.Placements(), want) && entry.Roles != nil {
				return fmt.Errorf("protocol %s with parameters %v places %d nodes: its stage machines in layout order, each datacenter's in turn, each node's partition its index within its datacenter (`meridian cluster up` writes them)",
					c.Protocol, c.Params, len(want))
			}
			if !slices.Equal(c.Placements(), want) {
				return fmt.Errorf("protocol %s with parameters %v places %d nodes: each datacenter's replica (partition 0), in datacenter order, then its read-only nodes, partition by partition (dc and partition of each, in that order; `meridian cluster up` writes them)",
					c.Protocol, c.Params, len(want))
			}
			return nil
		}
	}
	partitioned := entry.NewClient != nil
	first := map[[2]int]int{} // (datacenter, partition) → the first node placed there
	for i, n := range c.Nodes {
		at := fmt.Sprintf("nodes[%d] (%s)", i, n.Name)
		if !partitioned && n.Partition != 0 {
			return fmt.Errorf("%s: partition %d, but protocol %s runs one full replica per datacenter (partition 0)", at, n.Partition, c.Protocol)
		}
		where := [2]int{n.DCIndex, n.Partition}
		j, dup := first[where]
		switch {
		case dup && partitioned:
			return fmt.Errorf("%s: datacenter %s has partition %d already, nodes[%d] (%s)", at, n.DC, n.Partition, j, c.Nodes[j].Name)
		case dup:
			return fmt.Errorf("%s: datacenter %s has a replica already, nodes[%d] (%s); protocol %s runs exactly one per datacenter",
				at, n.DC, j, c.Nodes[j].Name, c.Protocol)
		}
		first[where] = i
	}
	if !partitioned {
		return nil
	}
	if _, err := tcc.NewLayout(c.Placements(), c.Topology.N()); err != nil {
		byDC := make([][]int, c.Topology.N())
		for _, n := range c.Nodes {
			byDC[n.DCIndex] = append(byDC[n.DCIndex], n.Partition)
		}
		var have []string
		for dc, ps := range byDC {
			slices.Sort(ps)
			have = append(have, fmt.Sprintf("%s has %s", c.Topology.DCs[dc], strings.Trim(fmt.Sprint(ps), "[]")))
		}
		return fmt.Errorf("protocol %s is partitioned: every datacenter needs the partitions 0..N-1, one node each, but %s (%v)",
			c.Protocol, strings.Join(have, "; "), err)
	}
	return nil
}

// checkAddr checks a host:port address with a port in 1..65535. It returns the address
// normalized for duplicate detection, or an error to append to the field's name.
func checkAddr(addr string) (string, error) {
	if addr == "" {
		return "", errors.New(": missing address")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf(" %q is not host:port", addr)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf(" %q: port %q is not in 1..65535", addr, port)
	}
	return strings.ToLower(host) + "|" + strconv.Itoa(n), nil
}

// params converts the decoded params mapping, whose values must be scalars.
func params(m map[string]yaml.Node) (protocol.Params, error) {
	if len(m) == 0 {
		return nil, nil
	}
	p := make(protocol.Params, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		if v.Kind == yaml.AliasNode && v.Alias != nil {
			v = *v.Alias
		}
		switch {
		case k == "":
			return nil, errors.New("params: empty parameter name")
		case v.Kind != yaml.ScalarNode:
			return nil, fmt.Errorf("params: %s: want a single value, e.g. 10ms", k)
		case v.Tag == "!!null":
			return nil, fmt.Errorf("params: %s: missing value", k)
		case strings.HasPrefix(k, protocol.UnsafeParamPrefix):
			return nil, fmt.Errorf("params: %s deliberately breaks the protocol (a test-only negative control); a real cluster refuses it", k)
		}
		p[k] = v.Value
	}
	return p, nil
}

// validName reports whether s is a valid node name: ASCII letters, digits, '-' and '_'.
func validName(s string) bool {
	for _, r := range s {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

var unknownField = regexp.MustCompile(`field (.*?) not found in type [\w.]+`)

// typeNames replaces the decoder's Go type names in errors by what they are in the file.
var typeNames = strings.NewReplacer("cluster.file", "a cluster file", "cluster.nodeFile", "a node entry",
	"cluster.tlsFile", "a tls entry", "\n", `\n`, "\r", `\r`)

// decodeYAML decodes a cluster file and names unknown fields and types as the file calls them.
func decodeYAML(data []byte, f *file) error {
	err := strictyaml.Decode(data, f)
	if err == nil {
		return nil
	}
	return errors.New(typeNames.Replace(unknownField.ReplaceAllString(err.Error(), `unknown field "$1"`)))
}

// Node returns the index and entry of the node called name, or an error listing the known
// nodes.
func (c *Config) Node(name string) (int, *Node, error) {
	names := make([]string, len(c.Nodes))
	for i := range c.Nodes {
		if c.Nodes[i].Name == name {
			return i, &c.Nodes[i], nil
		}
		names[i] = c.Nodes[i].Name
	}
	return 0, nil, fmt.Errorf("%s: unknown node %q (known: %s)", c.Path, name, strings.Join(names, ", "))
}

// Placements returns the protocol's view of the nodes: node i is protocol.NodeID(i).
func (c *Config) Placements() []protocol.Node {
	out := make([]protocol.Node, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = protocol.Node{ID: protocol.NodeID(i), DC: n.DCIndex, Partition: n.Partition}
	}
	return out
}

// NodeDataDir returns node i's data directory: its own data_dir if set, else DataDir/<name>.
func (c *Config) NodeDataDir(i int) string {
	if d := c.Nodes[i].DataDir; d != "" {
		return d
	}
	return filepath.Join(c.DataDir, c.Nodes[i].Name)
}

// Marshal encodes c as a cluster file that Parse reads back as c (with c.Path as the path).
// Paths are written as stored; Load and Parse store them absolute.
func (c *Config) Marshal() ([]byte, error) {
	if c.TopologyRef == "" {
		return nil, errors.New("cluster: Marshal: no topology reference")
	}
	out := outFile{
		Name:         c.Name,
		Protocol:     c.Protocol,
		Params:       c.Params,
		Topology:     c.TopologyRef,
		WANEmulation: c.WANEmulation,
		Admin:        c.Admin,
		Jitter:       c.Jitter,
		JitterCorr:   (time.Duration(c.JitterCorrelationUs) * time.Microsecond).String(),
		Durability:   c.Durability,
		DataDir:      c.DataDir,
		Checkpoint:   c.CheckpointBytes,
		Record:       recordVersionsOut(c.NoVersionRecord),
		Nodes:        make([]nodeFile, len(c.Nodes)),
	}
	if c.ClientHopUs != 0 {
		out.ClientHop = formatUs(c.ClientHopUs)
	}
	if c.TLS != nil {
		out.TLS = &tlsFile{CA: c.TLS.CA}
	}
	for i, n := range c.Nodes {
		out.Nodes[i] = nodeFile{Name: n.Name, DC: n.DC, Partition: n.Partition, PeerAddr: n.PeerAddr,
			ClientAddr: n.ClientAddr, MetricsAddr: n.MetricsAddr, Cert: n.Cert, Key: n.Key, DataDir: n.DataDir}
	}
	var buf bytes.Buffer
	buf.WriteString("# Meridian cluster file; format: go doc github.com/meridian-kv/meridian/cluster\n")
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(out); err != nil {
		return nil, fmt.Errorf("cluster: Marshal: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("cluster: Marshal: %w", err)
	}
	return buf.Bytes(), nil
}

// formatUs writes a duration in microseconds in the largest exact unit of s, ms and us.
func formatUs(us int64) string {
	switch {
	case us%1_000_000 == 0:
		return strconv.FormatInt(us/1_000_000, 10) + "s"
	case us%1000 == 0:
		return strconv.FormatInt(us/1000, 10) + "ms"
	}
	return strconv.FormatInt(us, 10) + "us"
}

// Generate returns the configuration of a local cluster for `meridian cluster up`: one node per
// datacenter of topo, named after it, on 127.0.0.1 with consecutive ports from basePort (peer,
// client and metrics port of the first node, then of the second, …), WAN emulation on, and data
// under dir/data. topoRef names topo in the file (a preset name or a path; a relative path is made
// absolute). The cluster is called after dir's base name; Path is dir/cluster.yaml.
func Generate(topo *topology.Topology, topoRef, protocolName string, dir string, basePort int) *Config {
	return GeneratePartitioned(topo, topoRef, protocolName, dir, basePort, 1)
}

// GeneratePartitioned is Generate for a partitioned protocol: partitions nodes per datacenter,
// serving partitions 0..partitions-1 and named DC-pP (just DC when partitions is 1), in
// datacenter order.
func GeneratePartitioned(topo *topology.Topology, topoRef, protocolName string, dir string, basePort, partitions int) *Config {
	c := newConfig(topo, topoRef, protocolName, dir)
	for i, dc := range topo.DCs {
		for p := range partitions {
			node := dc
			if partitions > 1 {
				node = fmt.Sprintf("%s-p%d", dc, p)
			}
			c.addNode(node, i, p, basePort)
		}
	}
	return c
}

// GeneratePlaced is Generate for a partitioned read-write protocol (S-DUR): one node per replica
// of pl, in its node order, named DC-pPrR (replica R of partition P).
func GeneratePlaced(topo *topology.Topology, topoRef, protocolName string, dir string, basePort int, pl *partitioned.Placement) *Config {
	c := newConfig(topo, topoRef, protocolName, dir)
	for _, nd := range pl.Nodes() {
		r := slices.Index(pl.Node[nd.Partition], nd.ID)
		c.addNode(fmt.Sprintf("%s-p%dr%d", topo.DCs[nd.DC], nd.Partition, r), nd.DC, nd.Partition, basePort)
	}
	return c
}

// GenerateNodes is Generate for a read-write protocol that runs more nodes than a replica per
// datacenter (registry.Entry.Nodes: Ogre's RoT units): nodes in their order, a datacenter's
// replica (partition 0) named after the datacenter, its read-only nodes (partition P ≥ 1)
// DC-roP.
func GenerateNodes(topo *topology.Topology, topoRef, protocolName string, dir string, basePort int, nodes []protocol.Node) *Config {
	c := newConfig(topo, topoRef, protocolName, dir)
	for _, nd := range nodes {
		name := topo.DCs[nd.DC]
		if nd.Partition > 0 {
			name = fmt.Sprintf("%s-ro%d", name, nd.Partition)
		}
		c.addNode(name, nd.DC, nd.Partition, basePort)
	}
	return c
}

// addNode adds a node of datacenter dc serving partition p, on the next three ports from
// basePort.
func (c *Config) addNode(name string, dc, p, basePort int) {
	addr := func(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }
	port := basePort + 3*len(c.Nodes)
	c.Nodes = append(c.Nodes, Node{Name: name, DC: c.Topology.DCs[dc], DCIndex: dc, Partition: p,
		PeerAddr: addr(port), ClientAddr: addr(port + 1), MetricsAddr: addr(port + 2)})
}

// newConfig is a generated cluster's configuration without nodes.
func newConfig(topo *topology.Topology, topoRef, protocolName string, dir string) *Config {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if _, preset := topology.Preset(topoRef); !preset {
		if abs, err := filepath.Abs(topoRef); err == nil {
			topoRef = abs
		}
	}
	name := filepath.Base(dir)
	if !validName(name) {
		name = "local"
	}
	c := &Config{
		Path:         filepath.Join(dir, "cluster.yaml"),
		Name:         name,
		Protocol:     protocolName,
		Topology:     topo,
		TopologyRef:  topoRef,
		WANEmulation: true,
		Jitter:       1,
		Durability:   DurabilitySync,
		DataDir:      filepath.Join(dir, "data"),

		JitterCorrelationUs: topology.DefaultJitterCorrelationUs,
	}
	return c
}

// recordVersionsOut is the record_versions line Marshal writes: none for the default (record).
func recordVersionsOut(noRecord bool) *bool {
	if !noRecord {
		return nil
	}
	record := false
	return &record
}
