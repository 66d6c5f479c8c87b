package main

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"

	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/server/rpc"
	"github.com/meridian-kv/meridian/server/rpc/rpctest"
	"github.com/meridian-kv/meridian/topology"
)

// startClientServer serves an in-memory single-replica node on a loopback port.
func startClientServer(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	rpc.Register(s, rpctest.NewMemBackend(), rpc.Limits{})
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	return lis.Addr().String()
}

// runClientT runs `meridian client ARGS...` with stdin (none if nil) and returns its output and error.
func runClientT(t *testing.T, stdin io.Reader, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	err = execute(newRootCmd(stdin, &out, &errOut), append([]string{"client"}, args...))
	return out.String(), errOut.String(), err
}

// funcReader runs f when read, then reports end of input: in an io.MultiReader it runs between
// the lines before and after it.
type funcReader func()

func (f funcReader) Read([]byte) (int, error) { f(); return 0, io.EOF }

func TestClientCommand(t *testing.T) {
	addr := startClientServer(t)
	ep := "--endpoint=" + addr
	expect := func(stdin io.Reader, want string, args ...string) {
		t.Helper()
		out, _, err := runClientT(t, stdin, append([]string{ep}, args...)...)
		if err != nil || out != want {
			t.Errorf("client %s: %v\ngot:\n%s\nwant:\n%s", strings.Join(args, " "), err, out, want)
		}
	}
	// Every command registers a new client: ids 1, 2, 3, ...
	expect(nil, "committed\n", "put", "k", "v")                                          // t1.1
	expect(nil, "k = v (version t1.1)\n", "get", "k")                                    // client 2
	expect(nil, "nothing = \"\" (version init)\n", "get", "nothing")                     // client 3
	expect(nil, "k = v (version t1.1)\nx = \"\" (version init)\n", "snapshot", "k", "x") // client 4

	// Client 5: two transactions, an explicit abort, then a malformed line.
	script := `# a comment

get k
put k v2
put other hello  world
get other
commit
get k
put k never
abort
frobnicate k
get k
`
	out, _, err := runClientT(t, strings.NewReader(script), ep, "txn")
	want := "k = v (version t1.1)\nother = hello  world (version t5.1)\ncommitted\nk = v2 (version t5.1)\naborted: by client\n"
	var ue usageError
	if out != want || !errors.As(err, &ue) || !strings.Contains(err.Error(), "stdin line 11: unknown command \"frobnicate\"") {
		t.Errorf("txn: %v\ngot:\n%s\nwant:\n%s", err, out, want)
	}

	// Client 6 reads k, client 7 overwrites it, client 6's commit aborts.
	stdin := io.MultiReader(strings.NewReader("get k\nput k mine\n"),
		funcReader(func() { runClientT(t, nil, ep, "put", "k", "theirs") }),
		strings.NewReader("commit\n"))
	out, _, err = runClientT(t, stdin, ep, "txn")
	if want := "k = v2 (version t5.1)\naborted: stale-read\n"; out != want || err == nil || errors.As(err, &ue) {
		t.Errorf("stale txn: %v\ngot:\n%s\nwant:\n%s", err, out, want)
	}
	expect(nil, "k = theirs (version t7.1)\n", "get", "k")

	// End of input with an open transaction: nothing is committed.
	out, _, err = runClientT(t, strings.NewReader("put k lost\n"), ep, "txn")
	if out != "aborted: end of input before commit\n" || err == nil {
		t.Errorf("unterminated txn: %v\n%s", err, out)
	}
	for _, line := range []string{"get", "get a b", "put k", "commit now"} {
		_, _, err := runClientT(t, strings.NewReader("# x\n"+line+"\n"), ep, "txn")
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "stdin line 2:") {
			t.Errorf("%q: %v, want a usage error naming line 2", line, err)
		}
	}
	expect(nil, "k = theirs (version t7.1)\n", "get", "k")
}

func TestClientUsage(t *testing.T) {
	for _, args := range [][]string{
		{"put", "k", "v"},
		{"--endpoint=x"},
		{"--endpoint=x", "put", "k"},
		{"--endpoint=x", "get"},
		{"--endpoint=x", "get", ""},
		{"--endpoint=x", "snapshot"},
		{"--endpoint=x", "txn", "extra"},
		{"--endpoint=x", "delete", "k"},
		{"--endpoint=x", "--timeout=0s", "get", "k"},
		{"--bogus"},
		{"--endpoint=x", "--cert=c.pem", "get", "k"},
		{"--endpoint=x", "--ca=ca.pem", "--key=k.pem", "get", "k"},
		{"--endpoint=x", "--ca=/nonexistent/ca.pem", "get", "k"},
	} {
		_, _, err := runClientT(t, nil, args...)
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("client %q: %v, want a usage error", args, err)
		}
	}
	if code, _, stderr := runCLI(t, "client", "--endpoint=x", "put", "k"); code != 2 || !strings.Contains(stderr, "put takes a key and a value") {
		t.Errorf("bad usage: exit %d, %s", code, stderr)
	}
	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := lis.Addr().String()
	lis.Close()
	_, _, err := runClientT(t, nil, "--endpoint="+dead, "--timeout=2s", "get", "k")
	var ue usageError
	if err == nil || errors.As(err, &ue) || !strings.Contains(err.Error(), "cannot register with") {
		t.Errorf("unreachable endpoint: %v", err)
	}
}

// writeClusterFile writes a cluster file of protocol on topology preset topo, with partitions
// per datacenter on ports from basePort (nothing need listen there), and returns its path.
func writeClusterFile(t *testing.T, topoName, protocolName string, partitions, basePort int, tls bool) string {
	t.Helper()
	topo, ok := topology.Preset(topoName)
	if !ok {
		t.Fatalf("no preset %s", topoName)
	}
	dir := t.TempDir()
	cfg := cluster.GeneratePartitioned(topo, topoName, protocolName, dir, basePort, partitions)
	if tls {
		cfg.TLS = &cluster.TLS{CA: filepath.Join(dir, "ca.pem")}
		for i := range cfg.Nodes {
			cfg.Nodes[i].Cert, cfg.Nodes[i].Key = filepath.Join(dir, "node.pem"), filepath.Join(dir, "node.key")
		}
	}
	data, err := cfg.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg.Path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg.Path
}

// TestClientTCCUsage checks the --cluster command lines refused before any node is called: each
// is a one-line usage error saying what is wrong.
func TestClientTCCUsage(t *testing.T) {
	geo := writeClusterFile(t, "aws-helios", "fastccs-geo", 2, 41000, false)
	helios := writeClusterFile(t, "aws-helios", "helios-0", 1, 41100, false)
	secure := writeClusterFile(t, "aws-helios", "fastccs-geo", 2, 41200, true)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cluster=" + geo, "--endpoint=x", "read", "k"}, "not both"},
		{[]string{"--dc=V", "--endpoint=x", "get", "k"}, "--dc goes with --cluster"},
		{[]string{"--cluster=" + geo}, "missing command (want read, write or session)"},
		{[]string{"--cluster=" + geo, "read"}, "read takes at least one key"},
		{[]string{"--cluster=" + geo, "read", "k", ""}, "empty key"},
		{[]string{"--cluster=" + geo, "write"}, "write takes at least one K=V"},
		{[]string{"--cluster=" + geo, "write", "k=v", "novalue"}, "malformed novalue"},
		{[]string{"--cluster=" + geo, "write", "=v"}, "malformed =v"},
		{[]string{"--cluster=" + geo, "write", "k=1", "j=2", "k=3"}, "key k given twice"},
		{[]string{"--cluster=" + geo, "session", "extra"}, "session takes no arguments"},
		{[]string{"--cluster=" + geo, "get", "k"}, "get is for --endpoint"},
		{[]string{"--cluster=" + geo, "delete", "k"}, "unknown command \"delete\" for --cluster"},
		{[]string{"--cluster=" + geo, "--ca=ca.pem", "read", "k"}, "the CA comes from the cluster file"},
		{[]string{"--cluster=" + geo, "--cert=c.pem", "read", "k"}, "--cert and --key go together"},
		{[]string{"--cluster=" + geo, "--timeout=-1s", "read", "k"}, "--timeout must be positive"},
		{[]string{"--cluster=" + geo, "--dc=mars", "read", "k"}, "--dc mars: cluster " + geo + " has no such datacenter (it has V, O, C, I, S)"},
		{[]string{"--cluster=" + geo, "--cert=c.pem", "--key=k.pem", "read", "k"}, "does not use TLS"},
		{[]string{"--cluster=" + secure, "read", "k"}, "uses mutual TLS: give --cert and --key"},
		{[]string{"--cluster=" + helios, "read", "k"}, "runs helios-0, not a transactional-causal protocol: use --endpoint"},
		{[]string{"--cluster=/nonexistent/cluster.yaml", "read", "k"}, "cluster file"},
		{[]string{"--endpoint=x", "read", "k"}, "read is for partitioned TCC clusters: give --cluster FILE"},
		{[]string{"--endpoint=x", "write", "k=v"}, "give --cluster FILE"},
	} {
		_, _, err := runClientT(t, nil, tc.args...)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("client %q: %v, want a one-line usage error containing %q", tc.args, err, tc.want)
		}
	}
	if code, _, stderr := runCLI(t, "client", "--cluster="+geo, "write", "a=1", "a=2"); code != 2 || !strings.Contains(stderr, "given twice") {
		t.Errorf("duplicate write key: exit %d, %s", code, stderr)
	}
}

// TestClientTCCUnreachable: a TCC command against a cluster whose nodes are down fails (exit
// status 1, not a usage error) naming the datacenter it could not register with.
func TestClientTCCUnreachable(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := lis.Addr().(*net.TCPAddr).Port
	lis.Close()
	// Node p of datacenter V listens for clients on port+1+3p: the first is the closed port.
	file := writeClusterFile(t, "aws-helios", "fastccs-geo", 2, port-1, false)
	_, _, err = runClientT(t, nil, "--cluster="+file, "--dc=V", "--timeout=2s", "read", "k")
	var ue usageError
	if err == nil || errors.As(err, &ue) || !strings.Contains(err.Error(), "cannot register with datacenter V") {
		t.Errorf("unreachable cluster: %v", err)
	}
}
