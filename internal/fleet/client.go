package fleet

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/receiptd/receiptd/internal/client"
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
		pool, err := client.LoadCAs(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("fleet: %w", err)
		}
		tlsCfg.RootCAs = pool
	}
	proxy, err := client.ProxyFunc(o.Proxy)
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
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
