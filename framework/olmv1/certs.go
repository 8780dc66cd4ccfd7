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
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return c, err
	}
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "cleanup-e2e olmv1 CA"},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return c, fmt.Errorf("create CA: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return c, err
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "catalogd"},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return c, fmt.Errorf("create serving certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return c, err
	}
	for path, block := range map[string]*pem.Block{
		filepath.Join(c.caDir, "ca.crt"): {Type: "CERTIFICATE", Bytes: caDER},
		c.certFile:                       {Type: "CERTIFICATE", Bytes: leafDER},
		c.keyFile:                        {Type: "EC PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			return c, err
		}
	}
	return c, nil
}
