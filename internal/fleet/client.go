package fleet

import (
	"fmt"
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

// NewClient builds the push's own http.Client (client.NewTransport): TLS
// verified (TLS 1.2 or later), a few idle connections to the one head
// office, nothing shared with the tax service's client.
func NewClient(o ClientOptions) (*http.Client, error) {
	tr, err := client.NewTransport(client.TransportOptions{CAFile: o.CAFile, Proxy: o.Proxy,
		MaxIdleConns: 2, MaxIdleConnsPerHost: 2, IdleConnTimeout: 5 * time.Minute, MaxResponseHeaderBytes: 64 << 10})
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	return &http.Client{Timeout: o.Timeout, Transport: tr}, nil
}
