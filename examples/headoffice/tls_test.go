package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/update/updatetest"
)

// selfSigned writes a certificate for 127.0.0.1, signed by itself, and
// its key as PEM files for -cert and -key; it returns their paths and the
// pool a till trusts it by.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "headoffice test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// TestReleaseDownloadIsOverTLSWithCertAndKey: with -cert and -key the
// tills connect over wss:// and the offer's download_url is https:// on
// the same address, serving the file offered.
func TestReleaseDownloadIsOverTLSWithCertAndKey(t *testing.T) {
	certFile, keyFile, pool := selfSigned(t)
	opamp, admin := startOffice(t, "-cert", certFile, "-key", keyFile)
	require.True(t, strings.HasPrefix(opamp, "wss://127.0.0.1:"), opamp)
	file, data := makeRelease(t, updatetest.NewSigner(t), "1.1.0")
	till := startTill(t, opamp, tillOptions{uid: uidOf(1), version: "1.0.0", shop: "017", ca: pool})
	waitListed(t, admin, 1)
	code, body := putRelease(t, admin, "", map[string]string{"file": file})
	require.Equal(t, http.StatusOK, code, body)
	require.Eventually(t, func() bool { return till.offer() != nil }, 10*time.Second, 10*time.Millisecond)
	url := till.offer().Packages[packageName].File.DownloadUrl
	host := strings.TrimSuffix(strings.TrimPrefix(opamp, "wss://"), "/v1/opamp")
	require.True(t, strings.HasPrefix(url, "https://"+host+"/releases/"), url)
	require.Equal(t, data, till.download(t))
}
