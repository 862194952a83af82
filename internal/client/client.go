package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// DefaultTimeout is the per-request timeout used when Config.Timeout is
// zero. It is long because a create can take tens of seconds while PosAPI
// flushes its own backlog (field notes), and a create cut off by the
// timeout is ambiguous: retrying it may issue the sale twice.
const DefaultTimeout = 60 * time.Second

// DefaultQueryTimeout caps the timeout of the operations a POS waits on
// through the lookup cache (info, bank accounts and every public lookup):
// an answer slower than this is no better than the cache's stale copy or
// its 503.
const DefaultQueryTimeout = 10 * time.Second

// DefaultMaxAnswer is the most of an upstream answer read when
// Config.MaxAnswer is zero (upstream.max_answer). A create answer is a few
// KiB; a broken proxy's endless body must not fill the till's memory.
const DefaultMaxAnswer = 1 << 20

// MaxMaxAnswer is the largest Config.MaxAnswer New accepts.
const MaxMaxAnswer = 64 << 20

// Op names one operation of the tax service. The string values are stable
// and suitable as configuration keys.
type Op string

// The operations of the tax service interface.
const (
	OpCreateReceipt  Op = "create_receipt"
	OpDeleteReceipt  Op = "delete_receipt"
	OpInfo           Op = "info"
	OpSendData       Op = "send_data"
	OpBankAccounts   Op = "bank_accounts"
	OpBranchInfo     Op = "branch_info"
	OpProductTaxCode Op = "product_tax_code"
	OpMerchantInfo   Op = "merchant_info"
	OpTinInfo        Op = "tin_info"
	OpClassification Op = "classification"
	// OpStockQr is served by the excise stock API (Config.StockBaseURL).
	OpStockQr Op = "stock_qr"
	// OpSaveMerchants (POST) is an operator registering merchants.
	OpSaveMerchants Op = "save_opr_merchants"
)

// Ops returns every operation, PosAPI ones first.
func Ops() []Op {
	return []Op{OpCreateReceipt, OpDeleteReceipt, OpInfo, OpSendData, OpBankAccounts,
		OpBranchInfo, OpProductTaxCode, OpMerchantInfo, OpTinInfo, OpClassification,
		OpStockQr, OpSaveMerchants}
}

// DefaultPaths returns the live service's path of every operation (see
// field-notes.md). The map is a fresh copy the caller may modify.
func DefaultPaths() map[Op]string {
	return map[Op]string{
		OpCreateReceipt:  "/rest/receipt",
		OpDeleteReceipt:  "/rest/receipt",
		OpInfo:           "/rest/info",
		OpSendData:       "/rest/sendData",
		OpBankAccounts:   "/rest/bankAccounts",
		OpBranchInfo:     "/api/info/check/getBranchInfo",
		OpProductTaxCode: "/api/receipt/receipt/getProductTaxCode",
		OpMerchantInfo:   "/api/info/check/getInfo",
		OpTinInfo:        "/api/info/check/getTinInfo",
		OpClassification: "/api/info/check/barcode/v2",
		OpStockQr:        "/api/inventory/stock/getStockQr",
		OpSaveMerchants:  "/api/tpi/receipt/saveOprMerchants",
	}
}

// Lookup reports whether op travels on the lookup transport (Config.Proxy,
// LookupHeaders): the public lookup API's operations (Config.LookupBaseURL)
// and the excise stock API's (Config.StockBaseURL), rather than PosAPI's
// (Config.BaseURL).
func (op Op) Lookup() bool {
	switch op {
	case OpBranchInfo, OpProductTaxCode, OpMerchantInfo, OpTinInfo, OpClassification, OpStockQr, OpSaveMerchants:
		return true
	}
	return false
}

// Query reports whether op is a read the lookup cache serves to a waiting
// POS: the public lookups, PosAPI info and bank accounts. Their timeout is
// capped at Config.QueryTimeout.
func (op Op) Query() bool {
	return op.Lookup() || op == OpInfo || op == OpBankAccounts
}

func (op Op) method() string {
	switch op {
	case OpCreateReceipt, OpSaveMerchants:
		return http.MethodPost
	case OpDeleteReceipt:
		return http.MethodDelete
	}
	return http.MethodGet
}

func (op Op) known() bool {
	_, ok := DefaultPaths()[op]
	return ok
}

// Config configures a Client. The zero value of every optional field is
// usable.
type Config struct {
	// BaseURL is the PosAPI address (receipt operations, /rest/info,
	// sendData, bankAccounts), e.g. "http://127.0.0.1:7080". Required.
	BaseURL string
	// LookupBaseURL is the public lookup API address. Empty means lookups
	// are not configured: they fail with ErrNotConfigured (class NotSent).
	LookupBaseURL string
	// StockBaseURL is the excise stock API address (OpStockQr), e.g.
	// "https://service.itc.gov.mn". Empty: OpStockQr fails with
	// ErrNotConfigured.
	StockBaseURL string
	// Paths overrides the path of single operations; operations missing
	// from it use DefaultPaths. Every path must start with "/".
	Paths map[Op]string
	// Timeout bounds one request, from dialing to the last byte of the
	// answer. Zero means DefaultTimeout (60s).
	Timeout time.Duration
	// QueryTimeout caps Timeout for queries (Op.Query). Zero means
	// DefaultQueryTimeout (10s).
	QueryTimeout time.Duration
	// Headers are added to every PosAPI request, LookupHeaders to every
	// lookup API request (a gateway key, say).
	Headers, LookupHeaders map[string]string
	// CAFile is a PEM bundle whose certificates are trusted IN ADDITION to
	// the system roots (a corporate TLS-inspecting proxy, say). Empty means
	// the system roots alone. TLS is always verified.
	CAFile string
	// MaxAnswer bounds what is read of any answer, in bytes; a larger one
	// is not read further and is an error (see exchange). Zero means
	// DefaultMaxAnswer; more than MaxMaxAnswer is ErrConfig.
	MaxAnswer int64
	// Proxy is the proxy URL (http, https or socks5) of the public lookup
	// API: every lookup request goes through it, whatever its host (the
	// operator set it for that upstream; NO_PROXY does not apply). Empty
	// means the standard environment variables (HTTPS_PROXY, HTTP_PROXY,
	// NO_PROXY). PosAPI requests never use it: they always follow the
	// environment, which never proxies a loopback address, so receipts do
	// not travel through a proxy meant for the public API.
	Proxy string
	// OnTiming, when set, is told the timing of every answer whose head
	// arrived (see Timing): how receiptd compares the tax service's clock
	// with its own. It is called on the request's goroutine and must be
	// quick; it never sees a body.
	OnTiming func(Timing)
}

// Timing is our clock around one exchange and the times the answer gave.
type Timing struct {
	Op Op
	// Sent is when the request was about to leave, Received when the
	// answer's head arrived (our wall clock).
	Sent, Received time.Time
	// Date is the answer's Date header as written (empty when absent).
	Date string
	// ReceiptDate is a create answer's date as the upstream wrote it
	// (empty for other operations and answers without one).
	ReceiptDate string
}

// Client is the typed tax service client. It is safe for concurrent use.
type Client struct {
	base, lookupBase string
	stockBase        string
	paths            map[Op]string
	timeout          time.Duration
	queryTimeout     time.Duration // min(timeout, Config.QueryTimeout)
	maxAnswer        int64
	headers          map[string]string
	lookupHeaders    map[string]string
	// lookupHC carries the lookups (Config.Proxy), posHC PosAPI's GETs;
	// both keep connections alive.
	lookupHC, posHC *http.Client
	// sendHC carries creates and deletes (PosAPI, like posHC) that have no
	// predialed connection of their own (Predial), each on a fresh one: a
	// POST written to a keep-alive connection the upstream has just
	// closed would come back as Ambiguous although nothing was processed.
	sendHC *http.Client
	// predialAddr is where Predial dials: PosAPI's host and port, when
	// creates go to it without a proxy; empty otherwise.
	predialAddr string
	transports  []*http.Transport
	onTiming    func(Timing)
	warm        warmPool // connections kept for the next create (Predial)
}

// New validates cfg and returns a Client. It opens no connection.
func New(cfg Config) (*Client, error) {
	base, err := cleanBase("base URL", cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	if base == "" {
		return nil, fmt.Errorf("client: base URL: %w", ErrConfig)
	}
	lookupBase, err := cleanBase("lookup base URL", cfg.LookupBaseURL)
	if err != nil {
		return nil, err
	}
	stockBase, err := cleanBase("stock base URL", cfg.StockBaseURL)
	if err != nil {
		return nil, err
	}
	paths, err := pathsOf(cfg.Paths)
	if err != nil {
		return nil, err
	}
	lookupProxy, err := ProxyFunc(cfg.Proxy)
	if err != nil {
		return nil, err
	}
	posTr, err := NewTransport(TransportOptions{CAFile: cfg.CAFile, MaxIdleConns: 16, MaxIdleConnsPerHost: 4,
		IdleConnTimeout: 90 * time.Second, ExpectContinueTimeout: time.Second, MaxResponseHeaderBytes: 1 << 20})
	if err != nil {
		return nil, err
	}
	lookupTr := posTr.Clone()
	lookupTr.Proxy = lookupProxy
	sendTr := posTr.Clone()
	sendTr.DisableKeepAlives = true
	sendTr.DialContext = predialDial(sendTr.DialContext)
	maxAnswer, err := maxAnswerOf(cfg.MaxAnswer)
	if err != nil {
		return nil, err
	}
	timeout, queryTimeout := cfg.Timeout, cfg.QueryTimeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if queryTimeout <= 0 {
		queryTimeout = DefaultQueryTimeout
	}
	c := &Client{
		base: base, lookupBase: lookupBase, stockBase: stockBase, paths: paths, timeout: timeout,
		queryTimeout: min(timeout, queryTimeout), maxAnswer: maxAnswer,
		headers: copyMap(cfg.Headers), lookupHeaders: copyMap(cfg.LookupHeaders),
		lookupHC:    &http.Client{Transport: lookupTr, CheckRedirect: checkRedirect},
		posHC:       &http.Client{Transport: posTr, CheckRedirect: checkRedirect},
		sendHC:      &http.Client{Transport: sendTr, CheckRedirect: checkRedirect},
		predialAddr: predialAddr(base, sendTr.Proxy),
		transports:  []*http.Transport{lookupTr, posTr, sendTr},
		onTiming:    cfg.OnTiming,
	}
	return c, nil
}

// pathsOf is DefaultPaths with the overrides of Config.Paths, checked.
func pathsOf(over map[Op]string) (map[Op]string, error) {
	paths := DefaultPaths()
	for op, p := range over {
		if !op.known() {
			return nil, fmt.Errorf("client: path for unknown operation %q: %w", op, ErrConfig)
		}
		if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, "?#") {
			return nil, fmt.Errorf("client: path %q of %s must start with / and have no query: %w", p, op, ErrConfig)
		}
		paths[op] = p
	}
	return paths, nil
}

// maxAnswerOf is Config.MaxAnswer with its default, checked.
func maxAnswerOf(n int64) (int64, error) {
	switch {
	case n == 0:
		return DefaultMaxAnswer, nil
	case n < 0 || n > MaxMaxAnswer:
		return 0, fmt.Errorf("client: max answer %d bytes, want 1 to %d: %w", n, MaxMaxAnswer, ErrConfig)
	}
	return n, nil
}

// httpClient returns the client that carries op: the upstream is chosen by
// the operation, never by the target's host.
func (c *Client) httpClient(op Op) *http.Client {
	switch {
	case op.Lookup():
		return c.lookupHC
	case op.method() != http.MethodGet:
		return c.sendHC
	}
	return c.posHC
}

// CloseIdleConnections closes idle keep-alive connections; the Client stays
// usable.
func (c *Client) CloseIdleConnections() {
	for _, tr := range c.transports {
		tr.CloseIdleConnections()
	}
	c.warm.closeAll()
}

// checkRedirect never follows a redirect of a create or delete (net/http
// would turn a redirected POST into a GET): re-sending a receipt somewhere
// else is the caller's decision.
func checkRedirect(_ *http.Request, via []*http.Request) error {
	if via[0].Method != http.MethodGet || len(via) >= 5 {
		return http.ErrUseLastResponse
	}
	return nil
}

func cleanBase(what, raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("client: %s %q: %w: %w", what, raw, ErrConfig, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("client: %s %q: want http(s)://host[:port][/prefix]: %w", what, raw, ErrConfig)
	}
	return strings.TrimRight(raw, "/"), nil
}

// ProxyFunc returns an http.Transport's proxy: raw (an http, https or
// socks5 URL), or the environment's (HTTPS_PROXY, HTTP_PROXY) when raw is
// empty. A bad URL is ErrConfig. NewTransport and the lookup transport
// use it.
func ProxyFunc(raw string) (func(*http.Request) (*url.URL, error), error) {
	if raw == "" {
		return http.ProxyFromEnvironment, nil
	}
	pu, err := url.Parse(raw)
	if err != nil || pu.Host == "" || (pu.Scheme != "http" && pu.Scheme != "https" && pu.Scheme != "socks5") {
		return nil, fmt.Errorf("client: proxy %q: want http(s):// or socks5:// URL: %w", raw, ErrConfig)
	}
	return http.ProxyURL(pu), nil
}

// TransportOptions are what differs between the transports NewTransport
// builds. Each limit's zero value is that of http.Transport's field of the
// same name: no limit, no timeout, net/http's header limit.
type TransportOptions struct {
	// CAFile is a PEM bundle trusted besides the system's roots (TLSConfig);
	// empty: the system's roots alone.
	CAFile string
	// Proxy is an http, https or socks5 URL (ProxyFunc); empty: the
	// environment's.
	Proxy string
	// The idle connections kept, and for how long.
	MaxIdleConns, MaxIdleConnsPerHost int
	IdleConnTimeout                   time.Duration
	// ExpectContinueTimeout: how long a body waits for 100 Continue.
	ExpectContinueTimeout time.Duration
	// MaxResponseHeaderBytes bounds an answer's head.
	MaxResponseHeaderBytes int64
}

// NewTransport builds the transport to a remote service over a network we
// do not own: TLS always verified (TLSConfig), a dial given 10 s and its
// connection kept alive every 30 s, a TLS handshake given 10 s, HTTP/2
// when the server offers it. The tax service's transports and the fleet
// push's are built by it, each with its own limits. A bad proxy URL or CA
// file is ErrConfig.
func NewTransport(o TransportOptions) (*http.Transport, error) {
	proxy, err := ProxyFunc(o.Proxy)
	if err != nil {
		return nil, err
	}
	tlsCfg, err := TLSConfig(o.CAFile)
	if err != nil {
		return nil, err
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                  proxy,
		DialContext:            dialer.DialContext,
		TLSClientConfig:        tlsCfg,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           o.MaxIdleConns,
		MaxIdleConnsPerHost:    o.MaxIdleConnsPerHost,
		IdleConnTimeout:        o.IdleConnTimeout,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  o.ExpectContinueTimeout,
		MaxResponseHeaderBytes: o.MaxResponseHeaderBytes,
	}, nil
}

// TLSConfig is the client side of TLS to a remote service: TLS 1.2 or
// later, the server's certificate always verified against the system's
// roots and, when caFile is set, the PEM certificates in it (LoadCAs).
// NewTransport and the OpAMP channel (control.ca_file) use it.
func TLSConfig(caFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile == "" {
		return cfg, nil
	}
	pool, err := LoadCAs(caFile)
	if err != nil {
		return nil, err
	}
	cfg.RootCAs = pool
	return cfg, nil
}

// LoadCAs returns the system's certificate pool with the PEM certificates
// of file added; a file without one is ErrConfig.
func LoadCAs(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("client: CA file: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("client: CA file %s: no PEM certificate found: %w", file, ErrConfig)
	}
	return pool, nil
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// target builds the URL of op with path-escaped segments and the query.
func (c *Client) target(op Op, query url.Values, segs []string) (string, error) {
	base, what := c.base, "base URL"
	switch {
	case op == OpStockQr:
		base, what = c.stockBase, "stock base URL"
	case op.Lookup():
		base, what = c.lookupBase, "lookup base URL"
	}
	if base == "" {
		return "", fmt.Errorf("%s: %s: %w", op, what, ErrNotConfigured)
	}
	var b strings.Builder
	b.WriteString(base)
	b.WriteString(c.paths[op])
	for _, s := range segs {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	if len(query) > 0 {
		b.WriteByte('?')
		b.WriteString(query.Encode())
	}
	return b.String(), nil
}

func (c *Client) setHeaders(req *http.Request, op Op, hasBody bool) {
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "receiptd")
	if hasBody {
		req.Header.Set("Content-Type", "application/json")
	}
	h := c.headers
	if op.Lookup() {
		h = c.lookupHeaders
	}
	for k, v := range h {
		req.Header.Set(k, v)
	}
	for k, vs := range forwarded(req.Context()) {
		req.Header[http.CanonicalHeaderKey(k)] = vs
	}
}

type forwardKey struct{}

// WithForward returns a context whose requests carry h's headers (a POS's
// Authorization or X-API-KEY for the excise stock API, say), set after and
// so over the configured ones. h must not change afterwards.
func WithForward(ctx context.Context, h http.Header) context.Context {
	if len(h) == 0 {
		return ctx
	}
	return context.WithValue(ctx, forwardKey{}, h)
}

func forwarded(ctx context.Context) http.Header {
	h, _ := ctx.Value(forwardKey{}).(http.Header)
	return h
}
