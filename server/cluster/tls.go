package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// NodeURI returns the name node i has in its TLS certificate, a URI subject alternative name:
// meridian://CLUSTER/NODE, for example meridian://demo/A. With mutual TLS a node accepts a peer
// connection only from the node its certificate names, and dials a peer only if the peer's
// certificate names the node it meant to reach.
func (c *Config) NodeURI(i int) *url.URL {
	return &url.URL{Scheme: "meridian", Host: c.Name, Path: "/" + c.Nodes[i].Name}
}

// checkTLSName checks that a cluster with mutual TLS has a name that can go into NodeURI.
func checkTLSName(name string) error {
	if !validName(name) {
		return fmt.Errorf("tls: cluster name %q cannot name nodes in certificates (meridian://CLUSTER/NODE): use ASCII letters, digits, '-' and '_'", name)
	}
	return nil
}

// CheckNodeCert returns an error unless cert names node i of the cluster (has NodeURI(i) among
// its URI subject alternative names). It does not verify the certificate's signature: the TLS
// handshake does.
func (c *Config) CheckNodeCert(cert *x509.Certificate, i int) error {
	want := c.NodeURI(i).String()
	var have []string
	for _, u := range cert.URIs {
		if u.String() == want {
			return nil
		}
		have = append(have, u.String())
	}
	names := "no URI names"
	if len(have) > 0 {
		names = "URI names " + strings.Join(have, ", ")
	}
	return fmt.Errorf("certificate %q (%s) does not name node %s: want the URI name %s",
		cert.Subject.CommonName, names, c.Nodes[i].Name, want)
}

// certValidity is how long the certificates of GenerateTLS are valid; `meridian cluster up
// --tls` makes new ones every time.
const certValidity = 365 * 24 * time.Hour

// GenerateTLS makes the certificates of a local cluster with mutual TLS (`meridian cluster up
// --tls`) in dir/tls: a certificate authority (ca.pem; its private key is not kept, so that no
// further certificate can be signed), for every node a certificate naming it (NodeURI) and the
// hosts of its peer and client addresses, usable as server and client (node-NAME.pem,
// node-NAME-key.pem), and one client certificate (client.pem, client-key.pem) that names no node,
// for benches and clients. Keys are ECDSA P-256, readable by the owner only. It sets c.TLS and
// every node's Cert and Key, and returns the client certificate's and key's paths. It refuses to
// replace the certificates of a cluster running in dir.
func GenerateTLS(c *Config, dir string) (clientCert, clientKey string, err error) {
	dir, err = filepath.Abs(dir)
	if err != nil {
		return "", "", err
	}
	if err := checkNotRunning(dir); err != nil {
		return "", "", err
	}
	if err := checkTLSName(c.Name); err != nil {
		return "", "", err
	}
	tlsDir := filepath.Join(dir, "tls")
	if err := os.MkdirAll(tlsDir, 0o755); err != nil {
		return "", "", err
	}
	ca, err := newCA("meridian " + c.Name + " CA")
	if err != nil {
		return "", "", err
	}
	caPath := filepath.Join(tlsDir, "ca.pem")
	if err := writePEM(caPath, "CERTIFICATE", ca.cert.Raw, 0o644); err != nil {
		return "", "", err
	}
	for i := range c.Nodes {
		n := &c.Nodes[i]
		leaf := &x509.Certificate{
			Subject:     pkix.Name{CommonName: "meridian node " + n.Name},
			URIs:        []*url.URL{c.NodeURI(i)},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		}
		for _, addr := range []string{n.PeerAddr, n.ClientAddr, n.MetricsAddr} {
			addHost(leaf, addr)
		}
		n.Cert, n.Key = filepath.Join(tlsDir, "node-"+n.Name+".pem"), filepath.Join(tlsDir, "node-"+n.Name+"-key.pem")
		if err := ca.issue(leaf, n.Cert, n.Key); err != nil {
			return "", "", fmt.Errorf("tls: node %s: %w", n.Name, err)
		}
	}
	clientCert, clientKey = filepath.Join(tlsDir, "client.pem"), filepath.Join(tlsDir, "client-key.pem")
	client := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "meridian client"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if err := ca.issue(client, clientCert, clientKey); err != nil {
		return "", "", fmt.Errorf("tls: client: %w", err)
	}
	c.TLS = &TLS{CA: caPath}
	return clientCert, clientKey, nil
}

// LoadCA reads the PEM file of a certificate authority into a pool, for verifying the
// certificates it signed.
func LoadCA(path string) (*x509.CertPool, error) {
	caPEM, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tls: reading CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("tls: " + path + " holds no PEM certificate")
	}
	return pool, nil
}

// IdentityError says that a node's certificate does not identify it: it does not chain to the
// cluster CA, or it names another node. Probing again will not help.
type IdentityError struct{ Err error }

func (e *IdentityError) Error() string { return e.Err.Error() }
func (e *IdentityError) Unwrap() error { return e.Err }

// VerifyNode returns a tls.Config.VerifyConnection function for a connection to node i: the
// server's certificate chain must lead to roots, and the certificate must name node i
// (CheckNodeCert); otherwise it fails with an *IdentityError. Dialers use it with
// InsecureSkipVerify, so that a node is identified by the name its certificate gives it, not
// by the host name it is dialled at.
func (c *Config) VerifyNode(roots *x509.CertPool, i int) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return &IdentityError{errors.New("tls: the server presented no certificate")}
		}
		inter := x509.NewCertPool()
		for _, cert := range cs.PeerCertificates[1:] {
			inter.AddCert(cert)
		}
		leaf := cs.PeerCertificates[0]
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			return &IdentityError{fmt.Errorf("tls: node %s: %w", c.Nodes[i].Name, err)}
		}
		if err := c.CheckNodeCert(leaf, i); err != nil {
			return &IdentityError{err}
		}
		return nil
	}
}

// addHost adds the host of a host:port address to cert's names: an IP address, or a DNS name.
// A wildcard host (":7101", "0.0.0.0:7101") adds the loopback addresses nodes and clients dial.
func addHost(cert *x509.Certificate, addr string) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return // Parse has checked the addresses
	}
	ip := net.ParseIP(host)
	switch {
	case host == "" || ip != nil && ip.IsUnspecified():
		addIP(cert, net.IPv4(127, 0, 0, 1))
		addIP(cert, net.IPv6loopback)
	case ip != nil:
		addIP(cert, ip)
	case !slices.Contains(cert.DNSNames, host):
		cert.DNSNames = append(cert.DNSNames, host)
	}
}

// addIP adds ip to cert's IP addresses unless it is there already.
func addIP(cert *x509.Certificate, ip net.IP) {
	if !slices.ContainsFunc(cert.IPAddresses, ip.Equal) {
		cert.IPAddresses = append(cert.IPAddresses, ip)
	}
}

// certAuthority signs the certificates of GenerateTLS.
type certAuthority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// newCA makes a self-signed certificate authority called name.
func newCA(name string) (*certAuthority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: name},
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	if err := setValidity(tmpl); err != nil {
		return nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &certAuthority{cert: cert, key: key}, nil
}

// issue signs tmpl (its subject, names and extended key usages) for a fresh key and writes the
// certificate to certPath and the key to keyPath.
func (ca *certAuthority) issue(tmpl *x509.Certificate, certPath, keyPath string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	if err := setValidity(tmpl); err != nil {
		return err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	if err := writePEM(keyPath, "PRIVATE KEY", keyDER, 0o600); err != nil {
		return err
	}
	return writePEM(certPath, "CERTIFICATE", der, 0o644)
}

// setValidity gives tmpl a random serial number and certValidity from an hour ago (for clocks
// slightly behind).
func setValidity(tmpl *x509.Certificate) error {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return err
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = tmpl.NotBefore.Add(certValidity)
	return nil
}

// writePEM writes one PEM block to path with permissions perm, replacing the file atomically.
func writePEM(path, kind string, der []byte, perm os.FileMode) error {
	return writeFileAtomic(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), perm)
}
