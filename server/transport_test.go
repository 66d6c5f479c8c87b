package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/meridian-kv/meridian/protocol/wire"
	_ "github.com/meridian-kv/meridian/protocols/all" // the tests' cluster runs helios-0
	"github.com/meridian-kv/meridian/protocols/fullrep/helios"
	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/topology"
)

// syncBuffer is a bytes.Buffer safe for concurrent use: a node's log.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// testCluster returns a three-node helios-0 cluster (table4.1, nodes A, B, C) in a temporary
// directory; with withTLS its certificates are made by cluster.GenerateTLS. Nothing listens on
// its addresses.
func testCluster(t *testing.T, withTLS bool) *cluster.Config {
	t.Helper()
	dir := t.TempDir()
	topo, _ := topology.Preset("table4.1")
	cfg := cluster.Generate(topo, "table4.1", "helios-0", dir, 1)
	if withTLS {
		if _, _, err := cluster.GenerateTLS(cfg, dir); err != nil {
			t.Fatal(err)
		}
	}
	return cfg
}

// testNode builds node A of cfg, logging to the returned buffer; nothing runs yet.
func testNode(t *testing.T, cfg *cluster.Config) (*Node, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	n, err := New(cfg, "A", slog.New(slog.NewTextHandler(logs, nil)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return n, logs
}

// serveTransport gives n a transport on ln (with mutual TLS if tlsConf is set) and runs its
// accept loop until the test ends.
func serveTransport(t *testing.T, n *Node, ln net.Listener, tlsConf *tls.Config) *transport {
	t.Helper()
	n.transport = newTransport(n, ln, tlsConf)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		n.transport.accept(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		ln.Close()
		<-done
	})
	return n.transport
}

// listen opens a loopback listener.
func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// helloFrame is a valid hello frame of cfg's cluster claiming to be node from.
func helloFrame(t *testing.T, cfg *cluster.Config, from uint32) []byte {
	t.Helper()
	hello, err := wire.AppendHello(nil, wire.Hello{Version: wire.FormatVersion, Cluster: cfg.Name, Protocol: cfg.Protocol, From: from})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := wire.WriteFrame(&buf, wire.KindHello, hello); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// messageFrame is a valid, empty Helios message frame from node from of a three-node cluster.
func messageFrame(t *testing.T, from int) []byte {
	t.Helper()
	payload, err := helios.Codec.Append(nil, &helios.Message{From: from, SendTS: 1, Full: true, Table: make([]int64, 9)})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := wire.WriteFrame(&buf, wire.KindMessage, payload); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// closedByPeer reports whether the other end closes conn within d: a read ends with an error
// other than a timeout.
func closedByPeer(conn net.Conn, d time.Duration) bool {
	conn.SetReadDeadline(time.Now().Add(d))
	_, err := conn.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// nextInput returns the next input the transport hands the event loop, or false after d.
func nextInput(n *Node, d time.Duration) (input, bool) {
	select {
	case in := <-n.inputs:
		return in, true
	case <-time.After(d):
		return input{}, false
	}
}

// TestOversizedHellosRefused sends a node as many connections as it takes, each announcing a
// 64 MiB hello and sending 4 MiB of it: each is closed at once, before the node holds the hello,
// so its heap does not grow with what the connections send.
func TestOversizedHellosRefused(t *testing.T) {
	cfg := testCluster(t, false)
	n, logs := testNode(t, cfg)
	ln := listen(t)
	serveTransport(t, n, ln, nil)
	conns := make([]net.Conn, inboundPerPeer*(len(cfg.Nodes)-1)) // as many as it takes at once
	junk := make([]byte, 4<<20)
	var wg sync.WaitGroup
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range conns {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conns[i] = conn
		wg.Go(func() {
			conn.Write(append(binary.BigEndian.AppendUint32(nil, 64<<20), wire.KindHello))
			conn.Write(junk) // fails once the node has closed the connection
		})
	}
	wg.Wait()
	time.Sleep(100 * time.Millisecond) // let the node read what arrived
	runtime.GC()
	runtime.ReadMemStats(&after)
	if growth := int64(after.HeapAlloc) - int64(before.HeapAlloc); growth > 8<<20 {
		t.Errorf("the node's heap grew by %d MiB for %d oversized hellos", growth>>20, len(conns))
	}
	for i, conn := range conns {
		if !closedByPeer(conn, time.Second) {
			t.Errorf("connection %d with an oversized hello still open after 1s", i)
		}
	}
	if !strings.Contains(logs.String(), "frame too large") {
		t.Errorf("no refusal logged:\n%s", logs.String())
	}
}

// TestInboundConnectionCap opens as many idle connections as a node takes at once: the next one
// is closed at once and logged, and one more is taken once an idle one has gone.
func TestInboundConnectionCap(t *testing.T) {
	cfg := testCluster(t, false)
	n, logs := testNode(t, cfg)
	ln := listen(t)
	tr := serveTransport(t, n, ln, nil)
	if want := inboundPerPeer * (len(cfg.Nodes) - 1); cap(tr.inbound) != want {
		t.Fatalf("cap %d, want %d", cap(tr.inbound), want)
	}
	dial := func() net.Conn {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	idle := make([]net.Conn, cap(tr.inbound))
	for i := range idle {
		idle[i] = dial()
	}
	start := time.Now()
	if !closedByPeer(dial(), 2*time.Second) {
		t.Fatalf("a connection beyond the cap of %d was not closed", cap(tr.inbound))
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("a connection beyond the cap was closed after %s, not at once", d)
	}
	if !strings.Contains(logs.String(), "too many inbound connections") {
		t.Errorf("the refusal was not logged:\n%s", logs.String())
	}
	for i, conn := range idle {
		if closedByPeer(conn, 10*time.Millisecond) {
			t.Errorf("idle connection %d (within the cap) closed", i)
		}
	}
	idle[0].Close()
	time.Sleep(200 * time.Millisecond) // the node sees it end and frees its slot
	if closedByPeer(dial(), 300*time.Millisecond) {
		t.Error("no connection taken after one within the cap closed")
	}
}

// flakyListener fails its first fails Accept calls with EMFILE ("too many open files"),
// recording when each was made.
type flakyListener struct {
	net.Listener
	mu    sync.Mutex
	fails int
	calls []time.Time
}

func (l *flakyListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	l.calls = append(l.calls, time.Now())
	failing := len(l.calls) <= l.fails
	l.mu.Unlock()
	if failing {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.Addr(), Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

// TestAcceptRecoversFromErrors makes Accept fail a few times: the node pauses after each
// failure, doubling the pause from acceptBackoffMin, and then takes peer connections again.
func TestAcceptRecoversFromErrors(t *testing.T) {
	cfg := testCluster(t, false)
	n, logs := testNode(t, cfg)
	ln := &flakyListener{Listener: listen(t), fails: 4}
	tr := serveTransport(t, n, ln, nil)
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write(append(helloFrame(t, cfg, 1), messageFrame(t, 1)...))
	if in, ok := nextInput(n, 5*time.Second); !ok || in.kind != inMessage || in.from != 1 {
		t.Fatalf("no message from B after failed Accepts (got %+v, %v); log:\n%s", in, ok, logs.String())
	}
	ln.mu.Lock()
	calls := ln.calls
	ln.mu.Unlock()
	for i := 1; i <= ln.fails; i++ {
		want := min(acceptBackoffMin<<(i-1), acceptBackoffMax)
		if gap := calls[i].Sub(calls[i-1]); gap < want {
			t.Errorf("Accept call %d came %s after a failure, want a pause of at least %s", i+1, gap, want)
		}
	}
	if got := strings.Count(logs.String(), "too many open files"); got != ln.fails {
		t.Errorf("%d failures logged, want %d:\n%s", got, ln.fails, logs.String())
	}
	if tr.acceptStopped.Load() {
		t.Error("accept loop stopped")
	}
}

// TestHealthz checks that /healthz answers 200 only while the node is healthy, and 503 with
// the reason while it recovers, while its event loop is stuck, once its peer accept loop has
// stopped and once its event loop has stopped.
func TestHealthz(t *testing.T) {
	cfg := testCluster(t, false)
	n, logs := testNode(t, cfg)
	var err error
	if n.log, err = openInputLog(t.TempDir(), false, n.logger, false); err != nil {
		t.Fatal(err)
	}
	defer n.log.close()
	ln := listen(t)
	tr := serveTransport(t, n, ln, nil)
	ctx, cancel := context.WithCancel(context.Background())
	loopDone := make(chan struct{})
	go func() {
		defer close(loopDone)
		n.run(ctx)
	}()
	defer func() {
		cancel()
		<-loopDone
	}()
	var ready atomic.Bool
	h := n.httpHandler(&ready)
	check := func(wantCode int, wantBody string) {
		t.Helper()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		if rec.Code != wantCode || !strings.Contains(rec.Body.String(), wantBody) {
			t.Errorf("/healthz: %d %q, want %d %q", rec.Code, rec.Body.String(), wantCode, wantBody)
		}
	}
	check(http.StatusServiceUnavailable, "recovering")
	ready.Store(true)
	check(http.StatusOK, "ok")

	release := make(chan struct{})
	n.inputs <- input{kind: inCall, call: func() { <-release }}
	check(http.StatusServiceUnavailable, "event loop stuck")
	close(release)
	check(http.StatusOK, "ok")

	ln.Close() // the accept loop ends while the node runs
	for deadline := time.Now().Add(5 * time.Second); !tr.acceptStopped.Load(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the accept loop did not stop when its listener closed")
		}
	}
	check(http.StatusServiceUnavailable, "not accepting peer connections")
	if !strings.Contains(logs.String(), "no longer accepting peer connections") {
		t.Errorf("the accept loop's end was not logged:\n%s", logs.String())
	}

	cancel()
	<-loopDone
	close(n.stopped)
	check(http.StatusServiceUnavailable, "event loop stopped")
}

// dialAs opens a mutual-TLS connection to addr with the certificate at certPath and keyPath,
// verifying the server against cfg's CA.
func dialAs(t *testing.T, cfg *cluster.Config, addr, certPath, keyPath string) net.Conn {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: caPool(t, cfg), Certificates: []tls.Certificate{cert}, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// caPool holds cfg's CA certificate.
func caPool(t *testing.T, cfg *cluster.Config) *x509.CertPool {
	t.Helper()
	caPEM, err := os.ReadFile(cfg.TLS.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return pool
}

// TestAcceptChecksPeerCertificate connects to node A with B's certificate (valid, signed by the
// cluster CA) claiming to be C: A refuses the connection, logs why, and hands its replica
// nothing. With C's certificate the same hello and message go through.
func TestAcceptChecksPeerCertificate(t *testing.T) {
	cfg := testCluster(t, true)
	n, logs := testNode(t, cfg)
	tlsConf, _, err := n.tlsConfigs()
	if err != nil {
		t.Fatal(err)
	}
	ln := listen(t)
	serveTransport(t, n, ln, tlsConf)
	forged := dialAs(t, cfg, ln.Addr().String(), cfg.Nodes[1].Cert, cfg.Nodes[1].Key)
	forged.Write(append(helloFrame(t, cfg, 2), messageFrame(t, 2)...))
	if in, ok := nextInput(n, time.Second); ok {
		t.Fatalf("a message forged by B as C reached the replica: %+v", in)
	}
	if !closedByPeer(forged, 5*time.Second) {
		t.Error("the connection of B claiming to be C is still open")
	}
	if log := logs.String(); !strings.Contains(log, "refusing peer connection") || !strings.Contains(log, "does not name node C") {
		t.Errorf("the refusal was not logged:\n%s", log)
	}
	genuine := dialAs(t, cfg, ln.Addr().String(), cfg.Nodes[2].Cert, cfg.Nodes[2].Key)
	genuine.Write(append(helloFrame(t, cfg, 2), messageFrame(t, 2)...))
	if in, ok := nextInput(n, 5*time.Second); !ok || in.kind != inMessage || in.from != 2 {
		t.Fatalf("C's own message did not reach the replica (got %+v, %v); log:\n%s", in, ok, logs.String())
	}
}

// TestDialChecksServerCertificate has node A dial peer B at an address whose server presents
// C's certificate (valid, signed by the cluster CA): A refuses it. With B's certificate the dial
// succeeds.
func TestDialChecksServerCertificate(t *testing.T) {
	cfg := testCluster(t, true)
	n, _ := testNode(t, cfg)
	tlsConf, _, err := n.tlsConfigs()
	if err != nil {
		t.Fatal(err)
	}
	tr := newTransport(n, nil, tlsConf)
	n.transport = tr
	serveAs := func(node int) string {
		cert, err := tls.LoadX509KeyPair(cfg.Nodes[node].Cert, cfg.Nodes[node].Key)
		if err != nil {
			t.Fatal(err)
		}
		ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert},
			ClientCAs: caPool(t, cfg), ClientAuth: tls.RequireAndVerifyClientCert})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					defer conn.Close()
					io.Copy(io.Discard, bufio.NewReader(conn))
				}()
			}
		}()
		return ln.Addr().String()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b := tr.peers[1]
	b.addr = serveAs(2)
	if conn, err := tr.dial(ctx, b); err == nil {
		conn.Close()
		t.Fatal("A dialed B at a server whose certificate names C")
	} else if !strings.Contains(err.Error(), "does not name node B") {
		t.Errorf("dial error: %v", err)
	}
	b.addr = serveAs(1)
	conn, err := tr.dial(ctx, b)
	if err != nil {
		t.Fatalf("A could not dial B presenting its own certificate: %v", err)
	}
	conn.Close()
}

// TestOwnCertificateMustNameNode starts node A with B's certificate: it refuses to run.
func TestOwnCertificateMustNameNode(t *testing.T) {
	cfg := testCluster(t, true)
	cfg.Nodes[0].Cert, cfg.Nodes[0].Key = cfg.Nodes[1].Cert, cfg.Nodes[1].Key
	n, _ := testNode(t, cfg)
	if _, _, err := n.tlsConfigs(); err == nil || !strings.Contains(err.Error(), "does not name node A") {
		t.Fatalf("node A with B's certificate: %v", err)
	}
}

// TestAdminEndpoints: without admin: true the nemesis endpoints do not exist; with it, cut and
// heal mark the named peers (refusing unknown peers and GET), skew moves the replica's clock,
// and /status shows both.
func TestAdminEndpoints(t *testing.T) {
	for _, admin := range []bool{false, true} {
		cfg := testCluster(t, false)
		cfg.Admin = admin
		n, _ := testNode(t, cfg)
		serveTransport(t, n, listen(t), nil)
		h := n.httpHandler(new(atomic.Bool))
		do := func(method, path string) (int, string) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
			return rec.Code, rec.Body.String()
		}
		if !admin {
			if code, _ := do(http.MethodPost, "/admin/cut?peer=B"); code != http.StatusNotFound {
				t.Errorf("admin off: /admin/cut answered %d", code)
			}
			continue
		}
		for _, tc := range []struct {
			method, path string
			code         int
		}{
			{http.MethodGet, "/admin/cut?peer=B", http.StatusMethodNotAllowed},
			{http.MethodPost, "/admin/cut?peer=Z", http.StatusBadRequest},
			{http.MethodPost, "/admin/cut", http.StatusBadRequest},
			{http.MethodPost, "/admin/skew?offset=soon", http.StatusBadRequest},
			{http.MethodPost, "/admin/nap", http.StatusNotFound},
			{http.MethodPost, "/admin/cut?peer=B&peer=C", http.StatusOK},
			{http.MethodPost, "/admin/heal?peer=C", http.StatusOK},
			{http.MethodPost, "/admin/skew?offset=-250ms", http.StatusOK},
		} {
			if code, body := do(tc.method, tc.path); code != tc.code {
				t.Errorf("%s %s: %d %q, want %d", tc.method, tc.path, code, body, tc.code)
			}
		}
		cut := map[string]bool{}
		for _, p := range n.transport.status() {
			cut[p.Peer] = p.Cut
		}
		if !cut["B"] || cut["C"] || n.skewUs.Load() != -250_000 {
			t.Errorf("after cut B, C and heal C: cut %v, skew %d µs", cut, n.skewUs.Load())
		}
		if _, body := do(http.MethodGet, "/status"); !strings.Contains(body, `"cut":true`) || !strings.Contains(body, `"clock_skew_us":-250000`) {
			t.Errorf("/status: %s", body)
		}
	}
}

// TestRestartedPeerRedialedAtOnce keeps a peer down until this node's dial backoff has grown,
// then brings it back and has it connect to the node, as a restarted peer does: the node must
// dial it again at once, not when its backoff runs out. The e2e crash tests caught the backoff
// keeping a survivor's link to a restarted node down for up to dialBackoffMax after the restart,
// so that the next crash left one datacenter able to reach no other.
func TestRestartedPeerRedialedAtOnce(t *testing.T) {
	t.Parallel()
	cfg := testCluster(t, false)
	reserve := listen(t) // B's peer address, where nothing listens until B "restarts"
	addr := reserve.Addr().String()
	reserve.Close()
	cfg.Nodes[1].PeerAddr = addr
	n, _ := testNode(t, cfg)
	ln := listen(t)
	tr := serveTransport(t, n, ln, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tr.sendLoop(ctx, tr.peers[1])
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	// Dials to B fail at 0, 50, 150, 350, 750 and 1550 ms (dialBackoffMin doubling); the next
	// would be at 3150 ms, 1.55 s after B is back.
	time.Sleep(1600 * time.Millisecond)
	up, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("B's address was taken meanwhile: %v", err)
	}
	defer up.Close()
	back := time.Now()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write(helloFrame(t, cfg, 1)); err != nil {
		t.Fatal(err)
	}
	accepted := make(chan time.Time, 1)
	go func() {
		if c, err := up.Accept(); err == nil {
			accepted <- time.Now()
			c.Close()
		}
	}()
	select {
	case at := <-accepted:
		t.Logf("redialed %v after B connected", at.Sub(back).Round(time.Millisecond))
	case <-time.After(time.Second):
		t.Fatal("the node did not dial B again within 1 s of B connecting to it (its backoff's next dial was 1.55 s away)")
	}
}
