package control

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/gorilla/websocket"
	"github.com/open-telemetry/opamp-go/client/types"

	taxclient "github.com/receiptd/receiptd/internal/client"
)

// MaxMessage bounds a message from the head office, over either
// transport: one over it is refused before it is read whole (opamp-go's
// StartSettings.MaxMessageBytes, third_party/opamp-go), its connection
// closed, and the till connects again. It is MaxFragment and 64 KiB: a
// fragment at the limit still arrives with its envelope (hashes, content
// type, the flags and settings a server may add, a few hundred bytes), and
// a message holds the till's memory to little more than a fragment.
const MaxMessage = MaxFragment + 64<<10

// DefaultConnectTimeout bounds the opening of a connection to the head
// office: the dial, the TLS handshake and, over WebSocket, the whole
// opening handshake (proxy and upgrade included). An HTTP poll's whole
// exchange gets three times as long.
const DefaultConnectTimeout = 10 * time.Second

// errRedirect refuses every redirect: control.opamp_url is the server's
// own address, and a redirect could move the channel off TLS or to
// another host.
var errRedirect = errors.New("the head office answered with a redirect, which receiptd does not follow: set control.opamp_url to the address it names")

// refuseRedirect is the CheckRedirect of both transports.
func refuseRedirect(*http.Request, []*http.Request) error { return errRedirect }

// transports builds the HTTP client (HTTP polling) and the WebSocket
// dialer the OpAMP client uses instead of opamp-go's own: control.proxy,
// or the environment's proxy (HTTPS_PROXY, HTTP_PROXY, NO_PROXY) when it
// is empty, as every other connection to a remote service
// (taxclient.NewTransport); connect bounding the dial, TLS handshake and
// WebSocket handshake; no redirect followed.
func (c *Client) transports(connect time.Duration) (*http.Client, *websocket.Dialer, error) {
	tr, err := taxclient.NewTransport(taxclient.TransportOptions{
		CAFile: c.ctl.CAFile, Proxy: c.ctl.Proxy,
		MaxIdleConns: 2, MaxIdleConnsPerHost: 2, IdleConnTimeout: 3 * c.ctl.PollEvery.Duration,
		MaxResponseHeaderBytes: 64 << 10,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("control: control.ca_file or control.proxy: %w", err)
	}
	dialer := &net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}
	tr.DialContext = dialer.DialContext
	tr.TLSHandshakeTimeout = connect
	// An answer is a few KiB: not asking for gzip keeps what arrives what
	// MaxMessage counts, and spares the till a compressed bomb's CPU.
	tr.DisableCompression = true
	hc := &http.Client{Transport: tr, CheckRedirect: refuseRedirect, Timeout: 3 * connect}
	ws := &websocket.Dialer{
		Proxy:            tr.Proxy,
		NetDialContext:   dialer.DialContext,
		TLSClientConfig:  tr.TLSClientConfig,
		HandshakeTimeout: connect,
	}
	return hc, ws, nil
}

// checkRedirect is the OpAMP callback through which opamp-go's WebSocket
// client asks before it follows a redirect of the upgrade.
func checkRedirect(req *http.Request, via []*http.Request, _ []*http.Response) error {
	return refuseRedirect(req, via)
}

// tooLarge reports whether err is a message refused for its size.
func tooLarge(err error) bool {
	var e *types.MessageTooLargeError
	return errors.As(err, &e)
}
