package fleet

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"
)

// ClientOptions configure NewClient.
type ClientOptions struct {
	// CAFile is a PEM file of CAs trusted besides the system's; empty:
	// the system's only.
	CAFile string
	// Proxy is an http, https or socks5 URL; empty: the environment's
	// HTTPS_PROXY / HTTP_PROXY.
	Proxy string
	// Timeout bounds one request, its answer included.
	Timeout time.Duration
}

// NewClient builds the push's own http.Client: TLS verified (TLS 1.2 or
// later), a few idle connections to the one head office, nothing shared
// with the tax service's client.
func NewClient(o ClientOptions) (*http.Client, error) {
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("fleet: CA file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("fleet: CA file %s: no PEM certificate in it", o.CAFile)
		}
		tlsCfg.RootCAs = pool
	}
	proxy := http.ProxyFromEnvironment
	if o.Proxy != "" {
		pu, err := url.Parse(o.Proxy)
		if err != nil || pu.Host == "" {
			return nil, fmt.Errorf("fleet: proxy %q: want an http(s):// or socks5:// URL", o.Proxy)
		}
		proxy = http.ProxyURL(pu)
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Client{
		Timeout: o.Timeout,
		Transport: &http.Transport{
			Proxy:                  proxy,
			DialContext:            dialer.DialContext,
			TLSClientConfig:        tlsCfg,
			ForceAttemptHTTP2:      true,
			MaxIdleConns:           2,
			MaxIdleConnsPerHost:    2,
			IdleConnTimeout:        5 * time.Minute,
			TLSHandshakeTimeout:    10 * time.Second,
			MaxResponseHeaderBytes: 64 << 10,
		},
	}, nil
}
