package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocol/wire"
	"github.com/meridian-kv/meridian/protocols/fullrep/helios"
	"github.com/meridian-kv/meridian/protocols/fullrep/rlog"
	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/server/rpc"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/topology"
)

// testCA is a certificate authority made at test time.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key}
}

// writeCert writes the CA's certificate to path.
func (ca *testCA) writeCert(t *testing.T, path string) {
	t.Helper()
	writePEM(t, path, "CERTIFICATE", ca.cert.Raw)
}

// issue writes a certificate and key called name for 127.0.0.1, usable as server and client,
// with the URI names uris: a node's certificate carries its name in the cluster
// (cluster.Config.NodeURI).
func (ca *testCA) issue(t *testing.T, dir, name string, uris ...*url.URL) (certPath, keyPath string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, URIs: uris, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	writePEM(t, certPath, "CERTIFICATE", der)
	writePEM(t, keyPath, "EC PRIVATE KEY", keyDER)
	return certPath, keyPath
}

func writePEM(t *testing.T, path, kind string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestMutualTLSRefusesForeignCertificate runs a three-node cluster with mutual TLS where node C
// holds a certificate from another CA: cluster up refuses it, and, started by hand, A and B
// connect to each other and neither ever talks to C in either direction.
func TestMutualTLSRefusesForeignCertificate(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs real processes")
	}
	t.Parallel()
	dir := t.TempDir()
	clusterCA, otherCA := newCA(t, "meridian-test-ca"), newCA(t, "another-ca")
	caPath := filepath.Join(dir, "ca.pem")
	clusterCA.writeCert(t, caPath)
	topo, _ := topology.Preset("table4.1")
	cfg := cluster.Generate(topo, "table4.1", "helios-1", dir, freeBasePort(t, topo.N()))
	cfg.TLS = &cluster.TLS{CA: caPath}
	for i := range cfg.Nodes {
		ca := clusterCA
		if cfg.Nodes[i].Name == "C" {
			ca = otherCA
		}
		cfg.Nodes[i].Cert, cfg.Nodes[i].Key = ca.issue(t, dir, cfg.Nodes[i].Name, cfg.NodeURI(i))
	}
	// cluster up checks each node's identity on its metrics port, and refuses C.
	bin := meridianBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := cluster.Up(ctx, cfg, dir, bin, nil, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "node C") || !strings.Contains(err.Error(), "unknown authority") {
		t.Fatalf("cluster up with C's certificate from another CA: %v", err)
	}
	// Started by hand, C runs, and its peers refuse it.
	for _, nd := range cfg.Nodes {
		serve := exec.Command(bin, "serve", "--config", filepath.Join(dir, "cluster.yaml"), "--node", nd.Name)
		logFile, err := os.Create(filepath.Join(dir, nd.Name+"-by-hand.log"))
		if err != nil {
			t.Fatal(err)
		}
		serve.Stdout, serve.Stderr = logFile, logFile
		if err := serve.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { serve.Process.Kill(); serve.Wait(); logFile.Close() })
	}
	anonymous := metricsClient(nil)
	for _, nd := range cfg.Nodes {
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if resp, err := anonymous.Get("https://" + nd.MetricsAddr + "/healthz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %s not healthy after 15s", nd.Name)
			}
		}
	}
	time.Sleep(2 * time.Second)
	want := map[string]map[string]bool{"A": {"B": true, "C": false}, "B": {"A": true, "C": false}, "C": {"A": false, "B": false}}
	for _, nd := range cfg.Nodes {
		for _, p := range peerLinks(t, anonymous, nd) {
			heard := p.LastReceiveAgeS >= 0
			// C's own dials may look connected for a moment: with TLS 1.3 the client finishes
			// its handshake before the server has checked the client's certificate. Whether
			// anything was ever received is the definitive test.
			connectedOK := p.Connected == want[nd.Name][p.Peer] || nd.Name == "C"
			if !connectedOK || heard != want[nd.Name][p.Peer] {
				t.Errorf("%s → %s: connected %v, heard from %v; want %v", nd.Name, p.Peer, p.Connected, heard, want[nd.Name][p.Peer])
			}
		}
	}
}

// peerLink is one peer's line of a node's /status.
type peerLink struct {
	Peer            string  `json:"peer"`
	Connected       bool    `json:"connected"`
	LastReceiveAgeS float64 `json:"last_receive_age_s"`
}

// peerLinks fetches node nd's /status over HTTPS.
func peerLinks(t *testing.T, client *http.Client, nd cluster.Node) []peerLink {
	t.Helper()
	var st struct {
		Peers []peerLink `json:"peers"`
	}
	getJSON(t, client, "https://"+nd.MetricsAddr+"/status", &st)
	return st.Peers
}

// metricsClient is an HTTPS client for the metrics ports of a TLS cluster, presenting cert if
// not nil. It does not verify the servers: these tests read their own cluster's figures, and
// the nodes' certificates may come from several CAs.
func metricsClient(cert *tls.Certificate) *http.Client {
	conf := &tls.Config{InsecureSkipVerify: true}
	if cert != nil {
		conf.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: conf, DisableKeepAlives: true}}
}

// getStatus returns the status code of GET url.
func getStatus(t *testing.T, client *http.Client, url string) int {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// getJSON decodes the JSON answer to GET url into v.
func getJSON(t *testing.T, client *http.Client, url string, v any) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// TestMutualTLSRefusesForgedPeer runs a three-node mutual-TLS cluster whose certificates name
// their nodes, and checks that the nodes connect to and hear from each other. Then, holding B's
// certificate (valid, signed by the cluster CA), it connects to A's replica port claiming to be
// C and sends a message from C committing a write: A refuses the connection, logs why, and the
// write never reaches its replica. Holding C's own certificate, the same kind of message is
// installed at A, so the probe is one A would act on. The metrics port speaks HTTPS only, and
// its endpoints that reveal data (/versions, the profiler) refuse a client without a certificate.
func TestMutualTLSRefusesForgedPeer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs real processes")
	}
	t.Parallel()
	dir := t.TempDir()
	ca := newCA(t, "meridian-test-ca")
	caPath := filepath.Join(dir, "ca.pem")
	ca.writeCert(t, caPath)
	topo, _ := topology.Preset("table4.1")
	cfg := cluster.Generate(topo, "table4.1", "helios-0", dir, freeBasePort(t, topo.N()))
	cfg.TLS = &cluster.TLS{CA: caPath}
	for i := range cfg.Nodes {
		cfg.Nodes[i].Cert, cfg.Nodes[i].Key = ca.issue(t, dir, cfg.Nodes[i].Name, cfg.NodeURI(i))
	}
	cfg = bringUp(t, cfg, dir, meridianBinary(t))
	anonymous := metricsClient(nil)
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var missing []string
		for _, nd := range cfg.Nodes {
			for _, p := range peerLinks(t, anonymous, nd) {
				if !p.Connected || p.LastReceiveAgeS < 0 {
					missing = append(missing, nd.Name+" → "+p.Peer)
				}
			}
		}
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("correctly named nodes not linked after 15s: %v", missing)
		}
	}

	a := cfg.Nodes[0]
	if resp, err := http.Get("http://" + a.MetricsAddr + "/versions"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("A's metrics port answered /versions over plain HTTP")
		}
	}
	for path, want := range map[string]int{"/healthz": http.StatusOK, "/metrics": http.StatusOK,
		"/versions": http.StatusForbidden, "/debug/pprof/": http.StatusForbidden} {
		if got := getStatus(t, anonymous, "https://"+a.MetricsAddr+path); got != want {
			t.Errorf("%s without a client certificate: %d, want %d", path, got, want)
		}
	}
	certA, err := tls.LoadX509KeyPair(a.Cert, a.Key)
	if err != nil {
		t.Fatal(err)
	}
	certified := metricsClient(&certA)
	if got := getStatus(t, certified, "https://"+a.MetricsAddr+"/debug/pprof/"); got != http.StatusOK {
		t.Errorf("/debug/pprof/ with a cluster certificate: %d, want 200", got)
	}
	const c = 2 // C's node id
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	// sendAsC connects to A with node certNode's certificate, claims to be C and sends a
	// message from C whose log record commits a write of key.
	sendAsC := func(certNode int, key string) net.Conn {
		cert, err := tls.LoadX509KeyPair(cfg.Nodes[certNode].Cert, cfg.Nodes[certNode].Key)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := tls.Dial("tcp", a.PeerAddr, &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, ServerName: "127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		hello, err := wire.AppendHello(nil, wire.Hello{Version: wire.FormatVersion, Cluster: cfg.Name, Protocol: cfg.Protocol, From: c})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now().Add(time.Second).UnixMicro() // after every record of C's that A holds
		id := txn.NewID(0xfffff0+txn.ClientID(certNode), 1)
		tx := &txn.Txn{ID: id, Writes: []txn.Write{{Key: key, Value: []byte("v")}}}
		msg, err := helios.Codec.Append(nil, &helios.Message{From: c, SendTS: now, Full: true, Table: make([]int64, 9),
			Records: []rlog.Record[helios.Entry]{{Host: c, TS: now, Payload: helios.Entry{Kind: helios.Finished, Committed: true, Of: id, Txn: tx}}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := wire.WriteFrame(conn, wire.KindHello, hello); err != nil {
			t.Fatal(err)
		}
		wire.WriteFrame(conn, wire.KindMessage, msg) // may fail once A has refused the connection
		return conn
	}
	installedAtA := func(key string, within time.Duration) bool {
		for deadline := time.Now().Add(within); ; time.Sleep(50 * time.Millisecond) {
			var versions map[string][]string
			getJSON(t, certified, "https://"+a.MetricsAddr+"/versions", &versions)
			if _, ok := versions[key]; ok {
				return true
			}
			if time.Now().After(deadline) {
				return false
			}
		}
	}

	forged := sendAsC(1, "forged-by-B")
	if installedAtA("forged-by-B", 2*time.Second) {
		t.Fatal("B, claiming to be C, installed a write at A")
	}
	forged.SetReadDeadline(time.Now().Add(5 * time.Second))
	var ne net.Error
	if _, err := forged.Read(make([]byte, 1)); err == nil || errors.As(err, &ne) && ne.Timeout() {
		t.Errorf("A kept the connection of B claiming to be C open (read: %v)", err)
	}
	logA, err := os.ReadFile(filepath.Join(dir, "logs", "A.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(logA, []byte("refusing peer connection")) || !bytes.Contains(logA, []byte("does not name node C")) {
		t.Errorf("A did not log the refusal:\n%s", logA)
	}

	sendAsC(2, "sent-by-C")
	if !installedAtA("sent-by-C", 10*time.Second) {
		t.Fatal("C's own message did not install its write at A: the probe proves nothing")
	}
}

// TestClusterUpTLS starts a cluster with `meridian cluster up --tls`, which makes the CA and the
// certificates, runs `meridian bench --cluster` through it with the client certificate it made
// (transactions commit, the checker accepts), checks that the bench without a client
// certificate is refused, and stops the cluster.
func TestClusterUpTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs real processes")
	}
	t.Parallel()
	bin := meridianBinary(t)
	dir := t.TempDir()
	topo, _ := topology.Preset("table4.1")
	meridian := func(args ...string) (string, error) {
		out, err := exec.Command(bin, args...).CombinedOutput()
		return string(out), err
	}
	out, err := meridian("cluster", "up", "--tls", "--dir", dir, "--topology", "table4.1", "--protocol", "helios-0",
		"--base-port", strconv.Itoa(freeBasePort(t, topo.N())))
	if err != nil {
		t.Fatalf("cluster up --tls: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if err := cluster.Down(dir, io.Discard); err != nil {
			t.Errorf("cluster down: %v", err)
		}
	})
	clusterFile := filepath.Join(dir, "cluster.yaml")
	cfg, err := cluster.Load(clusterFile)
	if err != nil {
		t.Fatal(err)
	}
	tlsDir := filepath.Join(dir, "tls")
	if cfg.TLS == nil || cfg.TLS.CA != filepath.Join(tlsDir, "ca.pem") {
		t.Fatalf("cluster file's tls: %+v", cfg.TLS)
	}
	for _, nd := range cfg.Nodes {
		if nd.Cert != filepath.Join(tlsDir, "node-"+nd.Name+".pem") || nd.Key != filepath.Join(tlsDir, "node-"+nd.Name+"-key.pem") {
			t.Errorf("node %s: cert %s, key %s", nd.Name, nd.Cert, nd.Key)
		}
	}
	clientCert, clientKey := filepath.Join(tlsDir, "client.pem"), filepath.Join(tlsDir, "client-key.pem")
	if !strings.Contains(out, "--cert "+clientCert+" --key "+clientKey) {
		t.Errorf("cluster up does not show the client certificate:\n%s", out)
	}
	jsonPath := filepath.Join(dir, "bench.json")
	out, err = meridian("bench", "--cluster", clusterFile, "--cert", clientCert, "--key", clientKey,
		"--duration", "3s", "--warmup", "0s", "--clients-per-dc", "2", "--json", jsonPath)
	if err != nil {
		t.Fatalf("bench over TLS: %v\n%s", err, out)
	}
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Runs []struct {
			Checker struct {
				OK bool `json:"ok"`
			} `json:"checker"`
			DCs []struct {
				Committed int `json:"committed"`
			} `json:"datacenters"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(data, &res); err != nil || len(res.Runs) != 1 {
		t.Fatalf("bench JSON: %v\n%s", err, data)
	}
	committed := 0
	for _, dc := range res.Runs[0].DCs {
		committed += dc.Committed
	}
	if committed == 0 || !res.Runs[0].Checker.OK {
		t.Fatalf("bench over TLS: %d committed, checker ok %v\n%s", committed, res.Runs[0].Checker.OK, out)
	}
	if out, err := meridian("bench", "--cluster", clusterFile, "--duration", "1s"); err == nil {
		t.Errorf("bench without a client certificate succeeded:\n%s", out)
	}
}

// TestMutualTLSClusterCommits runs a cluster whose nodes all hold certificates from the cluster
// CA and drives a workload through the TLS client port with a client certificate from the same
// CA: transactions commit and the checker accepts the history. A client without a certificate
// is refused.
func TestMutualTLSClusterCommits(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs real processes")
	}
	t.Parallel()
	dir := t.TempDir()
	ca := newCA(t, "meridian-test-ca")
	caPath := filepath.Join(dir, "ca.pem")
	ca.writeCert(t, caPath)
	topo, _ := topology.Preset("table4.1")
	cfg := cluster.Generate(topo, "table4.1", "helios-0", dir, freeBasePort(t, topo.N()))
	cfg.TLS = &cluster.TLS{CA: caPath}
	for i := range cfg.Nodes {
		cfg.Nodes[i].Cert, cfg.Nodes[i].Key = ca.issue(t, dir, cfg.Nodes[i].Name, cfg.NodeURI(i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cluster.Up(ctx, cfg, dir, meridianBinary(t), nil, io.Discard); err != nil {
		t.Fatal(err)
	}
	defer cluster.Down(dir, io.Discard)
	loaded, err := cluster.Load(filepath.Join(dir, "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	clientCert, clientKey := ca.issue(t, dir, "client")
	cert, err := tls.LoadX509KeyPair(clientCert, clientKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	res, err := bench.RunCluster(context.Background(), workloadOptions(2*time.Second), loaded, &cert)
	if err != nil {
		t.Fatal(err)
	}
	if res.Checker.Committed == 0 || !res.Checker.OK {
		t.Fatalf("over mutual TLS: %s", res.Checker.Summary())
	}
	noCert := credentials.NewTLS(&tls.Config{RootCAs: pool})
	dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer dcancel()
	if conn, _, err := rpc.Dial(dctx, loaded.Nodes[0].ClientAddr, grpc.WithTransportCredentials(noCert)); err == nil {
		conn.Close()
		t.Fatal("a client without a certificate registered at a mutual-TLS node")
	}
}
