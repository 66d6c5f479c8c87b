package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	_ "github.com/meridian-kv/meridian/protocols/all"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/protocols/tcc"
	"github.com/meridian-kv/meridian/topology"
)

// writeFile writes content to dir/name, creating directories, and returns the path.
func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// node renders one node entry of a cluster file on one line; extra is added to the mapping.
func node(name, dc string, port int, extra string) string {
	s := fmt.Sprintf("  - {name: %q, dc: %q, peer_addr: 127.0.0.1:%d, client_addr: 127.0.0.1:%d, metrics_addr: 127.0.0.1:%d",
		name, dc, 7100+port, 7200+port, 7300+port)
	if extra != "" {
		s += ", " + extra
	}
	return s + "}\n"
}

const header = "name: demo\nprotocol: helios-0\ntopology: table4.1\n"

var threeNodes = "nodes:\n" + node("A", "A", 1, "") + node("B", "B", 2, "") + node("C", "C", 3, "")

func TestParseErrors(t *testing.T) {
	nodesWith := func(c string) string {
		return "nodes:\n" + node("A", "A", 1, "") + node("B", "B", 2, "") + c
	}
	for _, tc := range []struct {
		name, content, want string
	}{
		{"yaml syntax", "name: [demo\n", "yaml: line"},
		{"two documents", header + threeNodes + "---\nname: x\n", "more than one document"},
		{"unknown field", header + "replicas: 3\n" + threeNodes, `yaml: line 4: unknown field "replicas"`},
		{"unknown node field", header + nodesWith(node("C", "C", 3, "zone: 1")), `unknown field "zone"`},
		{"wrong type", header + "wan_emulation: [1]\n" + threeNodes, "cannot unmarshal"},
		{"empty file", "", "cluster.yaml: missing name"},
		{"missing name", "protocol: helios-0\ntopology: table4.1\n" + threeNodes, "cluster.yaml: missing name"},
		{"control chars in name", "name: \"a\\tb\"\nprotocol: mf\ntopology: table4.1\n" + threeNodes, `name "a\tb": control characters`},
		{"missing protocol", "name: demo\ntopology: table4.1\n" + threeNodes, "cluster.yaml: missing protocol"},
		{"unknown protocol", "name: demo\nprotocol: paxos\ntopology: table4.1\n" + threeNodes,
			`cluster.yaml: unknown protocol "paxos" (known: ` + strings.Join(registry.Names(), ", ") + ")"},
		{"missing topology", "name: demo\nprotocol: mf\n" + threeNodes, "cluster.yaml: missing topology"},
		{"topology not a preset", "name: demo\nprotocol: mf\ntopology: table9\n" + threeNodes, `cluster.yaml: topology "`},
		{"topology file missing", "name: demo\nprotocol: mf\ntopology: nope.yaml\n" + threeNodes, "cluster.yaml: topology: open "},
		{"bad topology file", "name: demo\nprotocol: mf\ntopology: bad.yaml\n" + threeNodes, "bad.yaml: rtt_ms: missing RTT between A and C"},
		{"missing nodes", header, "cluster.yaml: missing nodes"},
		{"empty nodes", header + "nodes: []\n", "cluster.yaml: missing nodes"},
		{"params not scalar", header + "params: {interval: [1, 2]}\n" + threeNodes, "cluster.yaml: params: interval: want a single value"},
		{"params null", header + "params: {interval: ~}\n" + threeNodes, "cluster.yaml: params: interval: missing value"},
		{"test-only params", header + "params: {unsafe_skip_rule1: \"true\"}\n" + threeNodes, "cluster.yaml: params: unsafe_skip_rule1 deliberately breaks the protocol"},
		{"params empty name", header + "params: {\"\": 1}\n" + threeNodes, "cluster.yaml: params: empty parameter name"},
		{"node name empty", header + nodesWith(node("", "C", 3, "")), "cluster.yaml: nodes[2]: missing name"},
		{"node name invalid", header + nodesWith(node("C/1", "C", 3, "")), `cluster.yaml: nodes[2]: invalid name "C/1"`},
		{"node name duplicate", header + nodesWith(node("A", "C", 3, "")), "cluster.yaml: nodes[2] (A): duplicate name (also nodes[0])"},
		{"dc missing", header + nodesWith(node("C", "", 3, "")), "cluster.yaml: nodes[2] (C): missing dc"},
		{"dc unknown", header + nodesWith(node("C", "D", 3, "")), `cluster.yaml: nodes[2] (C): dc "D" is not a datacenter of topology table4.1 (A, B, C)`},
		{"negative partition", header + nodesWith(node("C", "C", 3, "partition: -1")), "cluster.yaml: nodes[2] (C): negative partition -1"},
		{"missing peer_addr", header + nodesWith("  - {name: C, dc: C, client_addr: 127.0.0.1:7203, metrics_addr: 127.0.0.1:7303}\n"),
			"cluster.yaml: nodes[2] (C): peer_addr: missing address"},
		{"missing client_addr", header + nodesWith("  - {name: C, dc: C, peer_addr: 127.0.0.1:7103, metrics_addr: 127.0.0.1:7303}\n"),
			"cluster.yaml: nodes[2] (C): client_addr: missing address"},
		{"missing metrics_addr", header + nodesWith("  - {name: C, dc: C, peer_addr: 127.0.0.1:7103, client_addr: 127.0.0.1:7203}\n"),
			"cluster.yaml: nodes[2] (C): metrics_addr: missing address"},
		{"addr without port", header + nodesWith("  - {name: C, dc: C, peer_addr: 127.0.0.1, client_addr: 127.0.0.1:7203, metrics_addr: 127.0.0.1:7303}\n"),
			`cluster.yaml: nodes[2] (C): peer_addr "127.0.0.1" is not host:port`},
		{"port zero", header + nodesWith("  - {name: C, dc: C, peer_addr: 127.0.0.1:7103, client_addr: 127.0.0.1:0, metrics_addr: 127.0.0.1:7303}\n"),
			`cluster.yaml: nodes[2] (C): client_addr "127.0.0.1:0": port "0" is not in 1..65535`},
		{"port too large", header + nodesWith("  - {name: C, dc: C, peer_addr: 127.0.0.1:7103, client_addr: 127.0.0.1:7203, metrics_addr: 127.0.0.1:65536}\n"),
			`metrics_addr "127.0.0.1:65536": port "65536" is not in 1..65535`},
		{"port not a number", header + nodesWith("  - {name: C, dc: C, peer_addr: 'localhost:http', client_addr: 127.0.0.1:7203, metrics_addr: 127.0.0.1:7303}\n"),
			`peer_addr "localhost:http": port "http" is not in 1..65535`},
		{"duplicate addr in a node", header + nodesWith("  - {name: C, dc: C, peer_addr: 127.0.0.1:7103, client_addr: 127.0.0.1:7103, metrics_addr: 127.0.0.1:7303}\n"),
			`cluster.yaml: nodes[2] (C): client_addr "127.0.0.1:7103" is already nodes[2] (C)'s peer_addr`},
		{"duplicate addr across nodes", header + nodesWith("  - {name: C, dc: C, peer_addr: 127.0.0.1:7103, client_addr: 127.0.0.1:7203, metrics_addr: 127.0.0.1:07101}\n"),
			`cluster.yaml: nodes[2] (C): metrics_addr "127.0.0.1:07101" is already nodes[0] (A)'s peer_addr`},
		{"duplicate addr host case", header + nodesWith("  - {name: C, dc: C, peer_addr: LOCALHOST:1, client_addr: localhost:1, metrics_addr: 127.0.0.1:7303}\n"),
			`client_addr "localhost:1" is already nodes[2] (C)'s peer_addr`},
		{"durability", header + "durability: async\n" + threeNodes, `cluster.yaml: durability "async": want sync or none`},
		{"negative jitter", header + "jitter: -0.5\n" + threeNodes, "cluster.yaml: jitter -0.5: want a finite number ≥ 0"},
		{"bad jitter correlation", header + "jitter_correlation: soon\n" + threeNodes, "cluster.yaml: jitter_correlation \"soon\": want a non-negative duration (e.g. 100ms; 0 for independent draws)"},
		{"negative jitter correlation", header + "jitter_correlation: -1s\n" + threeNodes, "cluster.yaml: jitter_correlation \"-1s\": want a non-negative duration (e.g. 100ms; 0 for independent draws)"},
		{"NaN jitter", header + "jitter: .nan\n" + threeNodes, "cluster.yaml: jitter NaN: want a finite number ≥ 0"},
		{"negative client_hop", header + "client_hop: -1ms\n" + threeNodes, `cluster.yaml: client_hop "-1ms" is negative`},
		{"bad client_hop", header + "client_hop: 500\n" + threeNodes, `cluster.yaml: client_hop "500" is not a duration`},
		{"tls without ca", header + "tls: {}\n" + threeNodes, "cluster.yaml: tls: missing ca"},
		{"tls node lacks cert", header + "tls: {ca: ca.pem}\n" + threeNodes, "cluster.yaml: nodes[0] (A): missing cert (tls is set)"},
		{"tls node lacks key", header + "tls: {ca: ca.pem}\nnodes:\n" + node("A", "A", 1, "cert: a.pem, key: a.key") + node("B", "B", 2, "cert: b.pem"),
			"cluster.yaml: nodes[1] (B): missing key (tls is set)"},
		{"cert without tls", header + nodesWith(node("C", "C", 3, "cert: c.pem, key: c.key")), "cluster.yaml: nodes[2] (C): cert and key need tls"},
		{"tls with a name certificates cannot carry", "name: my demo\nprotocol: helios-0\ntopology: table4.1\ntls: {ca: ca.pem}\n" + threeNodes,
			`cluster.yaml: tls: cluster name "my demo" cannot name nodes in certificates`},
		{"shared data dir", header + "data_dir: d\n" + nodesWith(node("C", "C", 3, "data_dir: d/A")),
			"cluster.yaml: nodes[2] (C): data directory " + filepath.Join("DIR", "d", "A") + " is also nodes[0] (A)'s"},
		{"dc without node", header + "nodes:\n" + node("A", "A", 1, "") + node("C", "C", 3, "") + node("C2", "C", 4, ""),
			"cluster.yaml: datacenter B of topology table4.1 has no node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "bad.yaml", "datacenters: [A, B, C]\nrtt_ms: {A: {B: 1}, B: {C: 2}}\n")
			path := writeFile(t, dir, "cluster.yaml", tc.content)
			c, err := Load(path)
			if err == nil {
				t.Fatalf("Load accepted:\n%s", tc.content)
			}
			msg := strings.ReplaceAll(err.Error(), dir, "DIR")
			if c != nil || !strings.HasPrefix(msg, "DIR/cluster.yaml: ") || strings.Contains(msg, "\n") {
				t.Errorf("error %q (config %v): want one line starting with the path", msg, c)
			}
			if want := strings.ReplaceAll(tc.want, "cluster.yaml: ", "DIR/cluster.yaml: "); !strings.Contains(msg, want) {
				t.Errorf("error\n  %s\nwant it to contain\n  %s", msg, want)
			}
		})
	}
}

// TestParseExample checks every field of the full example and its Marshal/Parse round trip.
func TestParseExample(t *testing.T) {
	c, err := Load("testdata/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	td, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	topo, _, err := topology.Load("testdata/three-dcs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	abs := func(p string) string { return filepath.Join(td, p) }
	want := &Config{
		Path:         abs("example.yaml"),
		Name:         "demo",
		Protocol:     "helios-0",
		Params:       protocol.Params{"interval": "10ms", "gt": "500ms"},
		Topology:     topo,
		TopologyRef:  abs("three-dcs.yaml"),
		WANEmulation: true,
		Jitter:       0.5,

		JitterCorrelationUs: 250_000,
		ClientHopUs:         500,
		Durability:          DurabilityNone,
		DataDir:             abs("data"),
		TLS:                 &TLS{CA: abs("certs/ca.pem")},
		Nodes: []Node{
			{Name: "X", DC: "X", DCIndex: 0, PeerAddr: "127.0.0.1:7101", ClientAddr: "127.0.0.1:7201", MetricsAddr: "127.0.0.1:7301",
				DataDir: "/var/lib/meridian/X", Cert: abs("certs/X.pem"), Key: abs("certs/X-key.pem")},
			{Name: "Y", DC: "Y", DCIndex: 1, PeerAddr: "127.0.0.1:7102", ClientAddr: "127.0.0.1:7202", MetricsAddr: "127.0.0.1:7302",
				Cert: abs("certs/Y.pem"), Key: abs("certs/Y-key.pem")},
			{Name: "Z", DC: "Z", DCIndex: 2, PeerAddr: "[::1]:7103", ClientAddr: "localhost:7203", MetricsAddr: ":7303",
				DataDir: filepath.Join(filepath.Dir(td), "elsewhere", "Z"), Cert: abs("certs/Z.pem"), Key: abs("certs/Z-key.pem")},
		},
	}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("Load =\n%+v\nwant\n%+v", c, want)
	}
	for i, d := range []string{"/var/lib/meridian/X", abs("data/Y"), filepath.Join(filepath.Dir(td), "elsewhere", "Z")} {
		if got := c.NodeDataDir(i); got != d {
			t.Errorf("NodeDataDir(%d) = %s, want %s", i, got, d)
		}
	}
	wantPlacements := []protocol.Node{{ID: 0, DC: 0}, {ID: 1, DC: 1}, {ID: 2, DC: 2}}
	if got := c.Placements(); !reflect.DeepEqual(got, wantPlacements) {
		t.Errorf("Placements = %+v, want %+v", got, wantPlacements)
	}
	if i, n, err := c.Node("Y"); err != nil || i != 1 || n != &c.Nodes[1] {
		t.Errorf("Node(Y) = %d, %v, %v", i, n, err)
	}
	if _, _, err := c.Node("W"); err == nil || !strings.Contains(err.Error(), `unknown node "W" (known: X, Y, Z)`) {
		t.Errorf("Node(W): %v", err)
	}
	data, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	// The marshalled file is valid anywhere: its paths are absolute.
	again, err := Parse(c.Path, data)
	if err != nil {
		t.Fatalf("Parse(Marshal()): %v\n%s", err, data)
	}
	if !reflect.DeepEqual(again, c) {
		t.Errorf("round trip changed the config:\n%s\ngot  %+v\nwant %+v", data, again, c)
	}
	moved := writeFile(t, t.TempDir(), "moved.yaml", string(data))
	if m, err := Load(moved); err != nil || !reflect.DeepEqual(m.Nodes, c.Nodes) || m.TopologyRef != c.TopologyRef {
		t.Errorf("Marshal output moved elsewhere: %v", err)
	}
}

func TestParseDefaults(t *testing.T) {
	dir := t.TempDir()
	c, err := Load(writeFile(t, dir, "c.yml", header+"params: {}\n"+threeNodes))
	if err != nil {
		t.Fatal(err)
	}
	if c.Params != nil || c.Jitter != 1 || c.ClientHopUs != 0 || c.Durability != DurabilitySync || c.WANEmulation ||
		c.TLS != nil || c.DataDir != filepath.Join(dir, "data") || c.TopologyRef != "table4.1" {
		t.Errorf("defaults: %+v", c)
	}
	if got := c.NodeDataDir(2); got != filepath.Join(dir, "data", "C") {
		t.Errorf("NodeDataDir(2) = %s", got)
	}
	// jitter 0 is explicit "no jitter", not the default.
	c, err = Load(writeFile(t, dir, "c.yml", header+"jitter: 0\nclient_hop: 1500ns\n"+threeNodes))
	if err != nil || c.Jitter != 0 || c.ClientHopUs != 1 {
		t.Errorf("jitter 0, client_hop 1500ns: %+v, %v", c, err)
	}
	// Scalars of any type are parameter values, as written.
	c, err = Load(writeFile(t, dir, "c.yml", header+"params: {n: 3, on: true, f: 1.50}\n"+threeNodes))
	if want := (protocol.Params{"n": "3", "on": "true", "f": "1.50"}); err != nil || !reflect.DeepEqual(c.Params, want) {
		t.Errorf("params = %v, %v; want %v", c.Params, err, want)
	}
}

// TestRecordVersions: the nodes record version orders unless the file says record_versions:
// false, and Marshal writes the line only then.
func TestRecordVersions(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		line     string
		noRecord bool
	}{{"", false}, {"record_versions: true\n", false}, {"record_versions: false\n", true}} {
		c, err := Load(writeFile(t, dir, "c.yml", header+tc.line+threeNodes))
		if err != nil || c.NoVersionRecord != tc.noRecord {
			t.Fatalf("%q: NoVersionRecord %v, %v; want %v", tc.line, c.NoVersionRecord, err, tc.noRecord)
		}
		out, err := c.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(out), "record_versions: false"); got != tc.noRecord {
			t.Errorf("%q: Marshal wrote record_versions: false %v, want %v", tc.line, got, tc.noRecord)
		}
		if c, err = Parse(c.Path, out); err != nil || c.NoVersionRecord != tc.noRecord {
			t.Errorf("%q: the marshalled file reads back as NoVersionRecord %v, %v", tc.line, c.NoVersionRecord, err)
		}
	}
}

// TestRelativePaths checks that relative paths resolve against the cluster file's directory,
// not the working directory, and that a preset name wins over a file of that name.
func TestRelativePaths(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "topo/net.yaml", "datacenters: [P, Q]\nrtt_ms: {P: {Q: 10}}\n")
	writeFile(t, root, "conf/table4.1", "not a topology")
	writeFile(t, root, "conf/cluster.yaml", `name: rel
protocol: mf
topology: ../topo/net.yaml
data_dir: ./var//data/
tls: {ca: ca.pem}
nodes:
  - {name: P, dc: P, peer_addr: "h:1", client_addr: "h:2", metrics_addr: "h:3", cert: p/cert.pem, key: /abs/p.key}
  - {name: Q, dc: Q, peer_addr: "h:4", client_addr: "h:5", metrics_addr: "h:6", cert: q.pem, key: q.key, data_dir: ../qdata}
`)
	t.Chdir(root)
	c, err := Load("conf/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(root, "conf")
	for _, p := range []struct{ got, want string }{
		{c.Path, filepath.Join(conf, "cluster.yaml")},
		{c.TopologyRef, filepath.Join(root, "topo", "net.yaml")},
		{c.DataDir, filepath.Join(conf, "var", "data")},
		{c.TLS.CA, filepath.Join(conf, "ca.pem")},
		{c.Nodes[0].Cert, filepath.Join(conf, "p", "cert.pem")},
		{c.Nodes[0].Key, "/abs/p.key"},
		{c.Nodes[1].Cert, filepath.Join(conf, "q.pem")},
		{c.NodeDataDir(0), filepath.Join(conf, "var", "data", "P")},
		{c.NodeDataDir(1), filepath.Join(root, "qdata")},
	} {
		if p.got != p.want {
			t.Errorf("got %s, want %s", p.got, p.want)
		}
	}
	if c.Topology.Name != "net" {
		t.Errorf("topology %q, want net", c.Topology.Name)
	}
	c, err = Parse("conf/cluster.yaml", []byte(header+threeNodes))
	if err != nil || c.TopologyRef != "table4.1" {
		t.Errorf("preset beside a file of its name: %v, %+v", err, c)
	}
}

func TestGenerate(t *testing.T) {
	root := t.TempDir()
	file := writeFile(t, root, "net.json", `{"datacenters": ["P", "Q"], "rtt_ms": {"P": {"Q": 10}}}`)
	for _, ref := range append(topology.PresetNames(), file) {
		topo, _, err := topology.Load(ref)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(root, "c1")
		c := Generate(topo, ref, "helios-1", dir, 9000)
		if len(c.Nodes) != topo.N() || c.Path != filepath.Join(dir, "cluster.yaml") || !c.WANEmulation ||
			c.DataDir != filepath.Join(dir, "data") || c.Name != "c1" {
			t.Errorf("%s: %+v", ref, c)
		}
		last := c.Nodes[len(c.Nodes)-1]
		if n := topo.N(); last.PeerAddr != fmt.Sprintf("127.0.0.1:%d", 9000+3*n-3) ||
			last.MetricsAddr != fmt.Sprintf("127.0.0.1:%d", 9000+3*n-1) || last.DC != topo.DCs[n-1] || last.DCIndex != n-1 {
			t.Errorf("%s: last node %+v", ref, last)
		}
		data, err := c.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		parsed, err := Parse(c.Path, data)
		if err != nil {
			t.Fatalf("%s: Parse(Marshal(Generate)): %v\n%s", ref, err, data)
		}
		if !reflect.DeepEqual(parsed, c) {
			t.Errorf("%s: Parse(Marshal(Generate)) =\n%+v\nwant\n%+v", ref, parsed, c)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"testdata/example.yaml"} {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"",
		"~",
		header + threeNodes,
		header + "params: {a: 1, b: [x], c: ~}\n" + threeNodes,
		header + "client_hop: 1h\njitter: 1e308\ndurability: none\n" + threeNodes,
		"name: \"\\x01\"\n" + header[len("name: demo\n"):] + threeNodes,
		"name: &a demo\nprotocol: mf\ntopology: three-dcs.yaml\nnodes:\n" + node("X", "X", 1, "") + node("Y", "Y", 2, "") + node("Z", "Z", 3, ""),
	} {
		f.Add([]byte(s))
	}
	path := filepath.Join("testdata", "fuzz.yaml") // relative files resolve to testdata/
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(path, data)
		if err != nil {
			if c != nil || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q with config %+v", err, c)
			}
			return
		}
		out, err := c.Marshal()
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		again, err := Parse(path, out)
		if err != nil {
			t.Fatalf("Parse(Marshal()): %v\n%s", err, out)
		}
		if !reflect.DeepEqual(again, c) {
			t.Fatalf("round trip changed the config:\n%s\ngot  %+v\nwant %+v", out, again, c)
		}
	})
}

// testPartitioned is a partitioned protocol for the layout tests: only its registry entry
// matters (a client factory marks it partitioned).
const testPartitioned = "cluster-test-tcc"

func init() {
	registry.Register(testPartitioned, registry.Entry{
		Family:      registry.Causal,
		Description: "layout tests only",
		New:         func(protocol.Config, protocol.Env) (protocol.Replica, error) { return nil, errors.New("not runnable") },
		NewClient:   func(tcc.ClientConfig) (tcc.Client, error) { return nil, errors.New("not runnable") },
	})
}

func TestLayout(t *testing.T) {
	tccHeader := "name: demo\nprotocol: " + testPartitioned + "\ntopology: table4.1\n"
	part := func(name, dc string, port, p int) string {
		return node(name, dc, port, fmt.Sprintf("partition: %d", p))
	}
	twoEach := part("A0", "A", 1, 0) + part("A1", "A", 2, 1) + part("B0", "B", 3, 0) + part("B1", "B", 4, 1) +
		part("C1", "C", 5, 1) + part("C0", "C", 6, 0)
	c, err := Parse("cluster.yaml", []byte(tccHeader+"nodes:\n"+twoEach))
	if err != nil {
		t.Fatalf("two partitions per datacenter: %v", err)
	}
	if got := c.Placements()[5]; got != (protocol.Node{ID: 5, DC: 2, Partition: 0}) {
		t.Errorf("placement of C0: %+v", got)
	}
	for _, tc := range []struct{ name, content, want string }{
		{"full replicas: second node in a datacenter", header + threeNodes + node("A2", "A", 4, ""),
			"cluster.yaml: nodes[3] (A2): datacenter A has a replica already, nodes[0] (A); protocol helios-0 runs exactly one per datacenter"},
		{"full replicas: a partition", header + "nodes:\n" + node("A", "A", 1, "") + node("B", "B", 2, "partition: 1") + node("C", "C", 3, ""),
			"cluster.yaml: nodes[1] (B): partition 1, but protocol helios-0 runs one full replica per datacenter (partition 0)"},
		{"partitioned: duplicate partition", tccHeader + "nodes:\n" + twoEach + part("B1x", "B", 7, 1),
			"cluster.yaml: nodes[6] (B1x): datacenter B has partition 1 already, nodes[3] (B1)"},
		{"partitioned: a gap", tccHeader + "nodes:\n" + part("A0", "A", 1, 0) + part("A2", "A", 2, 2) + part("B0", "B", 3, 0) +
			part("B1", "B", 4, 1) + part("C0", "C", 5, 0) + part("C1", "C", 6, 1),
			"cluster.yaml: protocol " + testPartitioned + " is partitioned: every datacenter needs the partitions 0..N-1, one node each, but A has 0 2; B has 0 1; C has 0 1 ("},
		{"partitioned: uneven datacenters", tccHeader + "nodes:\n" + twoEach + part("C2", "C", 7, 2),
			"but A has 0 1; B has 0 1; C has 0 1 2 (tcc: datacenter 2 has 3 partitions"},
	} {
		_, err := Parse("cluster.yaml", []byte(tc.content))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestGeneratePartitioned(t *testing.T) {
	topo, _ := topology.Preset("table4.1")
	c := GeneratePartitioned(topo, "table4.1", testPartitioned, t.TempDir(), 9000, 3)
	if len(c.Nodes) != 9 {
		t.Fatalf("%d nodes, want 9", len(c.Nodes))
	}
	if n := c.Nodes[5]; n.Name != "B-p2" || n.DC != "B" || n.DCIndex != 1 || n.Partition != 2 || n.MetricsAddr != "127.0.0.1:9017" {
		t.Errorf("node 5: %+v", n)
	}
	data, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := Parse(c.Path, data)
	if err != nil {
		t.Fatalf("Parse(Marshal(GeneratePartitioned)): %v\n%s", err, data)
	}
	if !reflect.DeepEqual(parsed, c) {
		t.Errorf("round trip:\n%+v\nwant\n%+v", parsed, c)
	}
}
