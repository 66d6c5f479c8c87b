package e2e

import (
	"encoding/binary"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/meridian-kv/meridian/protocol/wire"
)

// TestNodeSurvivesHostilePeers sends a running node's peer port what a broken or hostile peer
// might: garbage, an oversized length prefix, a hello from another cluster or an unknown node,
// and a valid hello followed by malformed messages. Each connection must be closed by the node,
// which must stay healthy and keep committing transactions.
func TestNodeSurvivesHostilePeers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs real processes")
	}
	t.Parallel()
	cfg, _ := startCluster(t, "table4.1", "helios-0")
	target := cfg.Nodes[0]
	hello := func(cluster, protocol string, from uint32) []byte {
		b, err := wire.AppendHello(nil, wire.Hello{Version: wire.FormatVersion, Cluster: cluster, Protocol: protocol, From: from})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	frame := func(kind byte, payload []byte) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(len(payload)+1))
		return append(append(b, kind), payload...)
	}
	validHello := frame(wire.KindHello, hello(cfg.Name, cfg.Protocol, 1))
	for _, tc := range []struct {
		name string
		send []byte
	}{
		{"garbage", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")},
		{"oversized length", binary.BigEndian.AppendUint32(nil, 1<<31)},
		{"empty frame", binary.BigEndian.AppendUint32(nil, 0)},
		{"message before hello", frame(wire.KindMessage, []byte{1, 2, 3})},
		{"hello from another cluster", frame(wire.KindHello, hello("other", cfg.Protocol, 1))},
		{"hello from another protocol", frame(wire.KindHello, hello(cfg.Name, "mf", 1))},
		{"hello from an unknown node", frame(wire.KindHello, hello(cfg.Name, cfg.Protocol, 9))},
		{"hello claiming to be the node itself", frame(wire.KindHello, hello(cfg.Name, cfg.Protocol, 0))},
		{"malformed message", append(append([]byte{}, validHello...), frame(wire.KindMessage, []byte{0xff, 0xff, 0xff})...)},
		{"truncated message", append(append([]byte{}, validHello...), binary.BigEndian.AppendUint32(nil, 1000)...)},
		{"unknown frame kind", append(append([]byte{}, validHello...), frame(77, []byte{1})...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.DialTimeout("tcp", target.PeerAddr, 2*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.Write(tc.send)
			if _, ok := conn.(*net.TCPConn); ok && tc.name == "truncated message" {
				conn.(*net.TCPConn).CloseWrite() // the node sees the stream end mid-frame
			}
			conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := conn.Read(make([]byte, 1)); err == nil {
				t.Fatal("the node answered a hostile peer instead of closing the connection")
			}
			resp, err := http.Get("http://" + target.MetricsAddr + "/healthz")
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("node unhealthy after %s: %v", tc.name, err)
			}
			resp.Body.Close()
		})
	}
	res, err := runShortWorkload(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Checker.Committed == 0 || !res.Checker.OK {
		t.Fatalf("after the hostile peers: %s", res.Checker.Summary())
	}
}
