package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meridian-kv/meridian/topology"
)

// readCert parses the PEM certificate at path.
func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("%s holds no PEM certificate", path)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// TestGenerateTLS checks the certificates of `cluster up --tls`: every node's certificate is
// signed by the CA, valid for serving its addresses' hosts (an IP address, a DNS name, loopback
// for a wildcard) and as a client, names that node and no other,
// and has its key readable by the owner only; the client certificate names no node and is valid
// only as a client; the cluster file with them parses.
func TestGenerateTLS(t *testing.T) {
	dir := t.TempDir()
	topo, _ := topology.Preset("table4.1")
	c := GeneratePartitioned(topo, "table4.1", "fastccs", dir, 7100, 2)
	c.Nodes[0].PeerAddr, c.Nodes[0].ClientAddr = "localhost:7100", ":7101" // a DNS name, a wildcard
	clientCert, clientKey, err := GenerateTLS(c, dir)
	if err != nil {
		t.Fatal(err)
	}
	if c.TLS == nil || c.TLS.CA != filepath.Join(dir, "tls", "ca.pem") {
		t.Fatalf("TLS = %+v", c.TLS)
	}
	roots := x509.NewCertPool()
	roots.AddCert(readCert(t, c.TLS.CA))
	verify := func(cert *x509.Certificate, host string, usage x509.ExtKeyUsage) error {
		_, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: host, KeyUsages: []x509.ExtKeyUsage{usage}})
		return err
	}
	keyOwnerOnly := func(path string) {
		if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("key %s: mode %v, %v; want 0600", path, st.Mode().Perm(), err)
		}
	}
	for i, n := range c.Nodes {
		cert := readCert(t, n.Cert)
		hosts := []string{"127.0.0.1"}
		if i == 0 {
			hosts = append(hosts, "localhost", "::1")
		}
		for _, host := range hosts {
			for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
				if err := verify(cert, host, usage); err != nil {
					t.Errorf("node %s's certificate (host %s, usage %v): %v", n.Name, host, usage, err)
				}
			}
		}
		for j := range c.Nodes {
			if err := c.CheckNodeCert(cert, j); (err == nil) != (i == j) {
				t.Errorf("node %s's certificate, checked as node %s's: %v", n.Name, c.Nodes[j].Name, err)
			}
		}
		if _, err := tls.LoadX509KeyPair(n.Cert, n.Key); err != nil {
			t.Errorf("node %s: %v", n.Name, err)
		}
		keyOwnerOnly(n.Key)
	}
	cert := readCert(t, clientCert)
	if err := verify(cert, "", x509.ExtKeyUsageClientAuth); err != nil {
		t.Errorf("client certificate: %v", err)
	}
	if err := verify(cert, "", x509.ExtKeyUsageServerAuth); err == nil {
		t.Error("the client certificate is valid for serving")
	}
	for i := range c.Nodes {
		if c.CheckNodeCert(cert, i) == nil {
			t.Errorf("the client certificate names node %s", c.Nodes[i].Name)
		}
	}
	if _, err := tls.LoadX509KeyPair(clientCert, clientKey); err != nil {
		t.Error(err)
	}
	keyOwnerOnly(clientKey)
	data, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(c.Path, data); err != nil {
		t.Fatalf("the cluster file with TLS: %v\n%s", err, data)
	}
}

// TestCheckNodeCert checks the certificate names a node accepts, and the refusal's message.
func TestCheckNodeCert(t *testing.T) {
	topo, _ := topology.Preset("table4.1")
	c := Generate(topo, "table4.1", "helios-0", "/tmp/demo", 7100)
	if got := c.NodeURI(1).String(); got != "meridian://demo/B" {
		t.Errorf("NodeURI(1) = %s", got)
	}
	named := func(uris ...string) *x509.Certificate {
		cert := &x509.Certificate{}
		cert.Subject.CommonName = "x"
		for _, s := range uris {
			u, err := url.Parse(s)
			if err != nil {
				t.Fatal(err)
			}
			cert.URIs = append(cert.URIs, u)
		}
		return cert
	}
	for _, tc := range []struct {
		uris []string
		want string // "" for accepted
	}{
		{[]string{"meridian://demo/B"}, ""},
		{[]string{"spiffe://x/y", "meridian://demo/B"}, ""},
		{nil, `certificate "x" (no URI names) does not name node B: want the URI name meridian://demo/B`},
		{[]string{"meridian://demo/C"}, `certificate "x" (URI names meridian://demo/C) does not name node B`},
		{[]string{"meridian://other/B"}, "does not name node B"},
		{[]string{"meridian://demo/b"}, "does not name node B"},
		{[]string{"https://demo/B"}, "does not name node B"},
	} {
		err := c.CheckNodeCert(named(tc.uris...), 1)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("URIs %v: %v, want %q", tc.uris, err, tc.want)
		}
	}
}

// TestGenerateTLSRefusesRunningCluster checks that GenerateTLS leaves the certificates of a
// running cluster alone.
func TestGenerateTLSRefusesRunningCluster(t *testing.T) {
	bin := buildFakeNode(t)
	c, dir := localCluster(t)
	if _, _, err := GenerateTLS(c, dir); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := Up(ctx, c, dir, bin, nil, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Down(dir, &bytes.Buffer{}) })
	ca, err := os.ReadFile(c.TLS.CA)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := GenerateTLS(c, dir); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Errorf("GenerateTLS over a running cluster: %v", err)
	}
	if again, _ := os.ReadFile(c.TLS.CA); !bytes.Equal(again, ca) {
		t.Error("GenerateTLS replaced the CA of a running cluster")
	}
}

// TestVerifyNode: a connection to node A is accepted with A's certificate and refused, with an
// IdentityError, with B's (valid, but naming B), with the client certificate (names no node)
// and with a certificate the cluster CA did not sign.
func TestVerifyNode(t *testing.T) {
	dir := t.TempDir()
	topo, _ := topology.Preset("table4.1")
	c := Generate(topo, "table4.1", "helios-0", dir, 7100)
	clientCert, _, err := GenerateTLS(c, dir)
	if err != nil {
		t.Fatal(err)
	}
	roots, err := LoadCA(c.TLS.CA)
	if err != nil {
		t.Fatal(err)
	}
	otherDir := t.TempDir()
	other := Generate(topo, "table4.1", "helios-0", otherDir, 7100)
	if _, _, err := GenerateTLS(other, otherDir); err != nil {
		t.Fatal(err)
	}
	verifyA := c.VerifyNode(roots, 0)
	for name, tc := range map[string]struct {
		path string
		ok   bool
	}{
		"A's own":           {c.Nodes[0].Cert, true},
		"B's":               {c.Nodes[1].Cert, false},
		"the client's":      {clientCert, false},
		"A's from a new CA": {other.Nodes[0].Cert, false},
	} {
		err := verifyA(tls.ConnectionState{PeerCertificates: []*x509.Certificate{readCert(t, tc.path)}})
		var identity *IdentityError
		if tc.ok != (err == nil) || !tc.ok && !errors.As(err, &identity) {
			t.Errorf("%s certificate: %v (want ok %v, else an IdentityError)", name, err, tc.ok)
		}
	}
	if _, err := LoadCA(c.Nodes[0].Key); err == nil {
		t.Error("LoadCA accepted a private key file")
	}
}
