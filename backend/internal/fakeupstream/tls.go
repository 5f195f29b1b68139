package fakeupstream

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"
)

// StartTLS is Start over HTTPS, offering HTTP/2 as vendors' endpoints
// do, with a certificate made for 127.0.0.1 at start: CertPEM is what a
// client must trust (SSL_CERT_FILE for a Go program). It panics when it
// cannot listen or make the certificate.
func StartTLS() (s *Server, certPEM []byte) {
	cert, certPEM, err := selfSigned(time.Now())
	if err != nil {
		panic(fmt.Sprintf("fakeupstream: making a certificate: %v", err))
	}
	return start(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}), certPEM
}

// selfSigned makes a certificate for 127.0.0.1 valid a day either side of
// now, which is its own issuer.
func selfSigned(now time.Time) (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "fakeupstream"},
		NotBefore:             now.Add(-24 * time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}
