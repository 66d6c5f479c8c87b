package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/meridian-kv/meridian/api/meridianpb"
	"github.com/meridian-kv/meridian/protocol/txn"
	_ "github.com/meridian-kv/meridian/protocols/all" // the tests name protocols
	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/topology"
)

// testConfig is a cluster of protocol on a topology of the datacenters dcs (20 ms apart), with
// partitions nodes per datacenter on free loopback ports, its data in a temporary directory.
func testConfig(t *testing.T, protocol string, dcs []string, partitions int) *cluster.Config {
	t.Helper()
	dir := t.TempDir()
	rtts := map[string]map[string]float64{}
	for i, a := range dcs {
		for _, b := range dcs[i+1:] {
			if rtts[a] == nil {
				rtts[a] = map[string]float64{}
			}
			rtts[a][b] = 20
		}
	}
	data, err := json.Marshal(map[string]any{"name": "test", "datacenters": dcs, "rtt_ms": rtts})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "topology.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	topo, _, err := topology.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := cluster.GeneratePartitioned(topo, path, protocol, dir, 1, partitions)
	addrs := freeAddrs(t, 3*len(cfg.Nodes))
	for i := range cfg.Nodes {
		nd := &cfg.Nodes[i]
		nd.PeerAddr, nd.ClientAddr, nd.MetricsAddr = addrs[3*i], addrs[3*i+1], addrs[3*i+2]
	}
	if data, err = cfg.Marshal(); err != nil {
		t.Fatal(err)
	}
	if cfg, err = cluster.Parse(cfg.Path, data); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// freeAddrs returns n distinct loopback addresses whose ports were free a moment ago: all are
// held open together while they are chosen, so that no two are the same.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	addrs := make([]string, n)
	for i := range addrs {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		addrs[i] = ln.Addr().String()
	}
	return addrs
}

// runNode runs node name of cfg in this process until the returned function stops it.
func runNode(t *testing.T, cfg *cluster.Config, name string) (stop func()) {
	t.Helper()
	n, err := New(cfg, name, slog.New(slog.NewTextHandler(io.Discard, nil)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("node %s: %v", name, err)
		}
	}
	t.Cleanup(stop)
	return stop
}

// nodeAPI connects to a node's client address; calls wait for it to listen.
func nodeAPI(t *testing.T, addr string) meridianpb.MeridianClient {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return meridianpb.NewMeridianClient(cc)
}

// testCtx ends with the test or after 20 s.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestNodeRefusesReusedTxnIDs: a transaction id is submitted for commit once. A second commit
// of it, concurrent with the first or after its decision, and a read for it, are refused with
// AlreadyExists before they reach the replica, also after the node restarted, and the other
// datacenter can write the keys (Helios's pools would keep a stale entry under the id); a
// client's transactions may commit out of order, within a window.
func TestNodeRefusesReusedTxnIDs(t *testing.T) {
	cfg := testConfig(t, "helios-0", []string{"A", "B"}, 1)
	stop := runNode(t, cfg, "A")
	runNode(t, cfg, "B")
	ctx := testCtx(t)
	api := nodeAPI(t, cfg.Nodes[0].ClientAddr)
	reg, err := api.Register(ctx, &meridianpb.RegisterRequest{}, grpc.WaitForReady(true))
	if err != nil {
		t.Fatal(err)
	}
	client, token := txn.ClientID(reg.GetClientId()), reg.GetToken()
	seq := uint64(0)
	// commit submits transaction n of the client, writing key; its decision does not matter.
	commit := func(n uint32, key string) error {
		seq++
		tx := &meridianpb.Txn{Id: uint64(txn.NewID(client, n)), Writes: []*meridianpb.Write{{Key: []byte(key), Value: []byte(key)}}}
		_, err := api.Commit(ctx, &meridianpb.CommitRequest{ClientId: uint32(client), Seq: seq, Txn: tx, Token: token})
		return err
	}
	refused := func(what string, err error, code codes.Code, id txn.ID) {
		t.Helper()
		if st := status.Convert(err); st.Code() != code || !strings.Contains(st.Message(), "transaction id "+id.String()+" ") {
			t.Errorf("%s: %v, want %s naming %s", what, err, code, id)
		}
	}

	// Two concurrent commits of one id, writing different keys: one is decided, one refused.
	errs := make(chan error, 2)
	for _, key := range []string{"a", "b"} {
		seq++
		req := &meridianpb.CommitRequest{ClientId: uint32(client), Seq: seq, Token: token, Txn: &meridianpb.Txn{Id: uint64(txn.NewID(client, 1)),
			Writes: []*meridianpb.Write{{Key: []byte(key), Value: []byte("dup")}}}}
		go func() {
			_, err := api.Commit(ctx, req)
			errs <- err
		}()
	}
	decided := 0
	for range 2 {
		if err := <-errs; err != nil {
			refused("concurrent duplicate", err, codes.AlreadyExists, txn.NewID(client, 1))
			continue
		}
		decided++
	}
	if decided != 1 {
		t.Fatalf("%d of two commits of one transaction id were decided, want 1", decided)
	}
	// The other datacenter can write both keys: no pool holds a stale entry under the id.
	apiB := nodeAPI(t, cfg.Nodes[1].ClientAddr)
	regB, err := apiB.Register(ctx, &meridianpb.RegisterRequest{}, grpc.WaitForReady(true))
	if err != nil {
		t.Fatal(err)
	}
	clientB := txn.ClientID(regB.GetClientId())
	for n := uint32(1); ; n++ {
		resp, err := apiB.Commit(ctx, &meridianpb.CommitRequest{ClientId: uint32(clientB), Seq: uint64(n), Token: regB.GetToken(),
			Txn: &meridianpb.Txn{Id: uint64(txn.NewID(clientB, n)), Writes: []*meridianpb.Write{{Key: []byte("a")}, {Key: []byte("b")}}}})
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetStatus() == meridianpb.CommitStatus_COMMIT_STATUS_COMMITTED {
			break
		}
		if n == 10 {
			t.Fatalf("B cannot write the keys of the duplicate: %s", resp.GetReason())
		}
		time.Sleep(100 * time.Millisecond)
	}
	err = commit(1, "c")
	refused("duplicate after the decision", err, codes.AlreadyExists, txn.NewID(client, 1))
	seq++
	_, err = api.Get(ctx, &meridianpb.GetRequest{ClientId: uint32(client), Seq: seq, Key: []byte("a"), TxnId: uint64(txn.NewID(client, 1)), Token: token})
	refused("read for a submitted transaction", err, codes.AlreadyExists, txn.NewID(client, 1))

	// Out of order, within the window: fine once each.
	for _, n := range []uint32{3, 2} {
		if err := commit(n, "c"); err != nil {
			t.Fatalf("commit of t.%d: %v", n, err)
		}
	}
	err = commit(2, "a")
	refused("duplicate below the newest", err, codes.AlreadyExists, txn.NewID(client, 2))
	for _, n := range []uint32{100, 98} {
		if err := commit(n, "z"); err != nil {
			t.Fatal(err)
		}
	}
	err = commit(4, "a")
	refused("an id older than the window", err, codes.OutOfRange, txn.NewID(client, 4))

	// After a restart the node knows what its clients submitted: it replayed its input log.
	stop()
	runNode(t, cfg, "A")
	// The first call may still go out on the connection to the stopped node and fail with
	// Unavailable; the client library retries such calls, and so does the test.
	for try := 0; ; try++ {
		_, err := api.Register(ctx, &meridianpb.RegisterRequest{ClientId: uint32(client), Token: token}, grpc.WaitForReady(true))
		if err == nil {
			break
		}
		if status.Code(err) != codes.Unavailable || try == 50 {
			t.Fatalf("registering again after the restart: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, n := range []uint32{100, 98} {
		err = commit(n, "a")
		refused("duplicate after a restart", err, codes.AlreadyExists, txn.NewID(client, n))
	}
	err = commit(1, "a")
	refused("an id older than the window after a restart", err, codes.OutOfRange, txn.NewID(client, 1))
	if err := commit(101, "c"); err != nil {
		t.Fatalf("a fresh id after the restart: %v", err)
	}
}

// TestNodeAdoptsOnlyPartitionIDs: a node registers an id another node allocated only for a
// partitioned protocol, and only if that node is in its datacenter; its own ids only with its
// token (checked by the service).
func TestNodeAdoptsOnlyPartitionIDs(t *testing.T) {
	idOf := func(node int, counter uint32) txn.ClientID { return txn.ClientID(uint32(node+1)<<24 | counter) }
	newNode := func(cfg *cluster.Config, name string) *Node {
		n, err := New(cfg, name, slog.New(slog.NewTextHandler(io.Discard, nil)), Options{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	full := newNode(testConfig(t, "helios-0", []string{"A", "B"}, 1), "A")
	// fastccs-geo: node 0 is A-p0, 1 A-p1, 2 B-p0, 3 B-p1.
	part := newNode(testConfig(t, "fastccs-geo", []string{"A", "B"}, 2), "A-p0")
	for _, tc := range []struct {
		n    *Node
		id   txn.ClientID
		want string // "" if adopted
	}{
		{full, idOf(1, 1), "a client of helios-0 uses only the node that registered it"},
		{full, idOf(0, 1), "this node allocated it, and only the token it issued proves it"},
		{full, idOf(5, 1), "no node of the cluster allocates it"},
		{part, idOf(1, 7), ""},
		{part, idOf(0, 7), "this node allocated it"},
		{part, idOf(2, 7), "node B-p0 of datacenter B allocated it, and a client uses only the partitions of its own datacenter"},
		{part, 0, "no node of the cluster allocates it"},
	} {
		err := tc.n.AdoptClientID(tc.id)
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s adopting %d: %v, want %q", tc.n.cfg.Protocol, tc.id, err, tc.want)
		}
	}
}

// TestClientKeyKept: the client key is drawn once and kept in the data directory.
func TestClientKeyKept(t *testing.T) {
	dir := t.TempDir()
	keys := make([][]byte, 2)
	for i := range keys {
		l, err := openInputLog(dir, true, slog.New(slog.NewTextHandler(io.Discard, nil)), false)
		if err != nil {
			t.Fatal(err)
		}
		if keys[i], err = l.clientKey(); err != nil {
			t.Fatal(err)
		}
		l.close()
	}
	if len(keys[0]) != 32 || string(keys[0]) != string(keys[1]) {
		t.Fatalf("keys %x and %x, want one 32-byte key", keys[0], keys[1])
	}
}
