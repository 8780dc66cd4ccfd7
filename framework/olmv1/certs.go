package olmv1

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// certs are what cert-manager makes in upstream's install: a CA and catalogd's serving certificate
// (catalog server and webhook) signed by it, for localhost and 127.0.0.1.
type certs struct {
	caDir             string // holds ca.crt: operator-controller's --catalogd-cas-dir
	certFile, keyFile string
}

// writeCerts writes a fresh CA and a serving certificate under dir, valid for a day.
func writeCerts(dir string) (certs, error) {
	c := certs{caDir: filepath.Join(dir, "cas"), certFile: filepath.Join(dir, "tls.crt"), keyFile: filepath.Join(dir, "tls.key")}
	if err := os.MkdirAll(c.caDir, 0o700); err != nil {
		return c, err
	}
	pems, err := NewServingCert("catalogd", "localhost", "127.0.0.1")
	if err != nil {
		return c, err
	}
	for path, data := range map[string][]byte{filepath.Join(c.caDir, "ca.crt"): pems.CA, c.certFile: pems.Cert, c.keyFile: pems.Key} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return c, err
		}
	}
	return c, nil
}

// ServingCert is a serving certificate and its key with the CA that signed it, PEM-encoded: the keys
// ca.crt, tls.crt and tls.key of the Secret cert-manager writes for a Certificate.
type ServingCert struct {
	CA, Cert, Key []byte
}

// NewServingCert makes a fresh CA and a certificate signed by it for hosts (DNS names or IPs).
func NewServingCert(commonName string, hosts ...string) (ServingCert, error) {
	ca, err := NewCA()
	if err != nil {
		return ServingCert{}, err
	}
	return ca.Issue(commonName, hosts...)
}

// CA signs serving certificates valid for a day: what cert-manager's CA issuer does in upstream's install.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

// NewCA makes a fresh self-signed CA.
func NewCA() (*CA, error) {
	now := time.Now()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "cleanup-e2e olmv1 CA"},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("create CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// PEM is the CA's certificate, PEM-encoded: what clients trust.
func (ca *CA) PEM() []byte { return ca.pem }

// Issue makes a serving certificate for hosts (DNS names or IPs) signed by ca.
func (ca *CA) Issue(commonName string, hosts ...string) (ServingCert, error) {
	out := ServingCert{CA: ca.pem}
	now := time.Now()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return out, err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return out, err
	}
	leaf := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: commonName},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			leaf.IPAddresses = append(leaf.IPAddresses, ip)
		} else {
			leaf.DNSNames = append(leaf.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return out, fmt.Errorf("create serving certificate for %v: %w", hosts, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return out, err
	}
	out.Cert = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	out.Key = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	return out, nil
}
