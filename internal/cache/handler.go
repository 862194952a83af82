package cache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/client"
)

// Header names set on every lookup answer.
const (
	HeaderCache = "X-Cache"
	HeaderAge   = "Age"
)

// X-Cache values.
const (
	Hit   = "HIT"
	Miss  = "MISS"
	Stale = "STALE"
)

// classPrefix is the classification route; segments follow it.
const classPrefix = "/api/info/check/barcode/v2"

// fixedRoutes maps the parameterless and query-parameter routes to their
// operation; the parameter name, when there is one, is in paramOf.
var fixedRoutes = map[string]client.Op{
	"/rest/info":                             client.OpInfo,
	"/rest/bankAccounts":                     client.OpBankAccounts,
	"/rest/sendData":                         client.OpSendData,
	"/api/info/check/getBranchInfo":          client.OpBranchInfo,
	"/api/receipt/receipt/getProductTaxCode": client.OpProductTaxCode,
	"/api/info/check/getInfo":                client.OpMerchantInfo,
	"/api/info/check/getTinInfo":             client.OpTinInfo,
	"/api/inventory/stock/getStockQr":        client.OpStockQr,
	"/api/tpi/receipt/saveOprMerchants":      client.OpSaveMerchants,
}

var paramOf = map[client.Op]string{
	client.OpBankAccounts: "tin",
	client.OpMerchantInfo: "tin",
	client.OpTinInfo:      "regNo",
	client.OpStockQr:      "stockQr",
}

// forwardedHeaders are the POS's headers passed upstream with a stock QR
// lookup and a merchant registration: the credentials those two need.
// receiptd's own auth.token never gets here (the API removes it).
var forwardedHeaders = []string{"Authorization", "X-API-KEY"}

func forwardOf(r *http.Request) http.Header {
	var h http.Header
	for _, name := range forwardedHeaders {
		if vs := r.Header.Values(name); len(vs) > 0 {
			if h == nil {
				h = http.Header{}
			}
			h[http.CanonicalHeaderKey(name)] = append([]string(nil), vs...)
		}
	}
	return h
}

// errNoRoute: the path is not one of the cache's routes (404).
var errNoRoute = errors.New("no such route")

// parseRoute maps a request's escaped path and query to a lookup. The
// send-data pass-through comes back as a lookup of client.OpSendData.
// Errors wrap ErrBadRequest (400) or errNoRoute (404).
func parseRoute(escapedPath string, query url.Values) (lookup, error) {
	if op, ok := fixedRoutes[escapedPath]; ok {
		if name, ok := paramOf[op]; ok {
			return paramLookup(op, name, query[name])
		}
		return lookup{op: op}, nil
	}
	rest, ok := strings.CutPrefix(escapedPath, classPrefix)
	if !ok || (rest != "" && rest[0] != '/') {
		return lookup{}, errNoRoute
	}
	if rest == "" {
		return classLookup(nil)
	}
	parts := strings.Split(rest[1:], "/")
	if len(parts) > client.MaxSegments {
		return lookup{}, fmt.Errorf("classification: %d segments, at most %d: %w", len(parts), client.MaxSegments, ErrBadRequest)
	}
	for i, p := range parts {
		s, err := url.PathUnescape(p)
		if err != nil {
			return lookup{}, fmt.Errorf("classification: segment %d: %w", i+1, ErrBadRequest)
		}
		parts[i] = s
	}
	return classLookup(parts)
}

// Handler serves the cached lookup routes and the send-data and
// merchant-registration pass-throughs; any other path is a 404, any method
// but GET and HEAD (GET only for sendData, POST only for
// saveOprMerchants) a 405, a bad
// parameter or classification path a 400 (all with the envelope). STALE
// answers are refreshed by Run's workers: without Run, a stale entry is
// served until it passes MaxStale, then fetched as a miss (PosAPI's info
// and bank accounts: see serveLive).
func (c *Cache) Handler() http.Handler {
	return http.HandlerFunc(c.serveHTTP)
}

func (c *Cache) serveHTTP(w http.ResponseWriter, r *http.Request) {
	lk, err := parseRoute(r.URL.EscapedPath(), r.URL.Query())
	switch {
	case errors.Is(err, errNoRoute):
		writeEnvelope(w, http.StatusNotFound, "no such route")
		return
	case err != nil:
		writeEnvelope(w, http.StatusBadRequest, err.Error())
		return
	}
	if !methodAllowed(lk.op, r.Method) {
		w.Header().Set("Allow", allowed(lk.op))
		writeEnvelope(w, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	switch lk.op {
	case client.OpSendData:
		c.serveSendData(w, r)
		return
	case client.OpSaveMerchants:
		c.serveSaveMerchants(w, r)
		return
	case client.OpStockQr:
		lk.fwd = forwardOf(r)
	}
	c.serveLookup(w, r, lk)
}

// methodAllowed: sendData makes PosAPI act, so a HEAD must not trigger it;
// a merchant registration is a POST.
func methodAllowed(op client.Op, method string) bool {
	switch op {
	case client.OpSendData:
		return method == http.MethodGet
	case client.OpSaveMerchants:
		return method == http.MethodPost
	}
	return method == http.MethodGet || method == http.MethodHead
}

func allowed(op client.Op) string {
	switch op {
	case client.OpSendData:
		return "GET"
	case client.OpSaveMerchants:
		return "POST"
	}
	return "GET, HEAD"
}

// serveLookup answers from the cache when it can, else from the upstream.
func (c *Cache) serveLookup(w http.ResponseWriter, r *http.Request, lk lookup) {
	if liveOp(lk.op) {
		c.serveLive(w, r, lk)
		return
	}
	now := c.now()
	if c.touch(lk.key()) {
		rec, err := c.read(lk)
		switch {
		case err != nil:
			c.log.Warn("read cache entry", zap.String("kind", string(lk.op)), zap.Error(err))
		case rec == nil:
			// Indexed but not yet committed (a put in flight): the fetch
			// below joins that put's flight.
		default:
			age := now.Sub(rec.fetched)
			ttl := c.ttl(lk.op, rec.negative)
			if age < ttl {
				c.m.CacheLookup(string(lk.op), "hit")
				c.writeRecord(w, rec, Hit, now)
				return
			}
			if c.cfg.MaxStale == 0 || age <= ttl+c.cfg.MaxStale {
				c.scheduleRefresh(lk)
				c.m.CacheLookup(string(lk.op), "stale")
				c.writeRecord(w, rec, Stale, now)
				return
			}
			// Too stale to serve: fetch as for a miss, with no fallback.
		}
	}
	// While the lookup API is known down a miss does not ask it, so a POS
	// does not wait out the query timeout on a hanging network each time.
	if err := c.knownDown(lk.op, now); err != nil {
		c.m.CacheLookup(string(lk.op), "miss")
		writeUnavailable(w, lk, err)
		return
	}
	res := c.fetchFor(r, lk)
	c.m.CacheLookup(string(lk.op), "miss")
	if !c.writeFetched(w, res) {
		writeUnavailable(w, lk, res.err)
	}
}

// serveLive answers PosAPI's info and bank accounts, which describe
// PosAPI's state now (unsentCount, leftLotteries): the upstream is asked
// first on every request, and the stored copy is served (STALE) only when
// it fails. While PosAPI is known down (a fetch failed less than
// knownDownFor ago) the upstream is not asked, so a POS polling /rest/info
// offline does not wait out the upstream timeout each time; Run's workers
// probe instead, and their first success ends it.
func (c *Cache) serveLive(w http.ResponseWriter, r *http.Request, lk lookup) {
	err := c.knownDown(lk.op, c.now())
	if err == nil {
		res := c.fetchFor(r, lk)
		if c.writeFetched(w, res) {
			c.m.CacheLookup(string(lk.op), "miss")
			return
		}
		err = res.err
	}
	now := c.now()
	if rec := c.fallback(lk, now); rec != nil {
		c.scheduleRefresh(lk)
		c.m.CacheLookup(string(lk.op), "stale")
		c.writeRecord(w, rec, Stale, now)
		return
	}
	c.m.CacheLookup(string(lk.op), "miss")
	writeUnavailable(w, lk, err)
}

// fallback returns lk's stored record when it may still be served (within
// MaxStale past its refresh interval), else nil.
func (c *Cache) fallback(lk lookup, now time.Time) *record {
	if !c.touch(lk.key()) {
		return nil
	}
	rec, err := c.read(lk)
	if err != nil {
		c.log.Warn("read cache entry", zap.String("kind", string(lk.op)), zap.Error(err))
		return nil
	}
	if rec == nil || (c.cfg.MaxStale > 0 && now.Sub(rec.fetched) > c.ttl(lk.op, rec.negative)+c.cfg.MaxStale) {
		return nil
	}
	return rec
}

// fetchFor fetches lk for r. The fetch is detached from r and bounded by
// fetchTimeout, so one impatient caller does not fail the others waiting
// on it; r's context bounds only this caller's wait.
func (c *Cache) fetchFor(r *http.Request, lk lookup) result {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), fetchTimeout)
	defer cancel()
	return c.fetch(r.Context(), fctx, lk)
}

// writeFetched writes the upstream's answer (MISS) and reports whether
// there was one to write.
func (c *Cache) writeFetched(w http.ResponseWriter, res result) bool {
	switch {
	case res.rec != nil:
		c.writeRecord(w, res.rec, Miss, c.now())
	case res.pass != nil:
		writeRaw(w, res.pass, Miss)
	default:
		return false
	}
	return true
}

func writeUnavailable(w http.ResponseWriter, lk lookup, err error) {
	w.Header().Set(HeaderCache, Miss)
	writeEnvelope(w, http.StatusServiceUnavailable,
		fmt.Sprintf("%s: no usable cached answer and the tax service is unreachable: %v", lk.op, err))
}

// serveSendData passes the request upstream; any answer is passed back,
// no answer is a 503 envelope. Never cached.
func (c *Cache) serveSendData(w http.ResponseWriter, r *http.Request) {
	raw, err := c.up.Get(r.Context(), client.OpSendData, nil)
	c.writePassed(w, raw, err, "send data")
}

// maxPassBody bounds a merchant registration's body; a real one lists a
// few TINs.
const maxPassBody = 1 << 20

// serveSaveMerchants passes an operator's merchant registration upstream as
// it is, with the POS's X-API-KEY; any answer is passed back, no answer is
// a 503 envelope. Never cached.
func (c *Cache) serveSaveMerchants(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxPassBody+1))
	var mbe *http.MaxBytesError // the API's own bound on every body
	switch {
	case errors.As(err, &mbe) || err == nil && len(body) > maxPassBody:
		writeEnvelope(w, http.StatusRequestEntityTooLarge, "body too large")
		return
	case err != nil:
		writeEnvelope(w, http.StatusBadRequest, fmt.Sprintf("read body: %v", err))
		return
	}
	raw, err := c.up.SaveOprMerchants(client.WithForward(r.Context(), forwardOf(r)), body)
	c.writePassed(w, raw, err, "save operator merchants")
}

// writePassed writes a pass-through's answer, or the 503 envelope when
// there was none.
func (c *Cache) writePassed(w http.ResponseWriter, raw *client.Raw, err error, what string) {
	cl, _ := client.ClassOf(err)
	if raw != nil && (err == nil || cl == client.Rejected || cl == client.Transient) {
		writeRaw(w, raw, "")
		return
	}
	writeEnvelope(w, http.StatusServiceUnavailable, fmt.Sprintf("%s: the tax service is unreachable: %v", what, err))
}

func (c *Cache) writeRecord(w http.ResponseWriter, rec *record, state string, now time.Time) {
	h := w.Header()
	h.Set("Content-Type", contentType(rec.contentType))
	h.Set(HeaderCache, state)
	h.Set(HeaderAge, strconv.FormatInt(int64(max(now.Sub(rec.fetched), 0)/time.Second), 10))
	h.Set("Content-Length", strconv.Itoa(len(rec.body)))
	w.WriteHeader(rec.status)
	_, _ = w.Write(rec.body)
}

func writeRaw(w http.ResponseWriter, raw *client.Raw, state string) {
	h := w.Header()
	h.Set("Content-Type", contentType(raw.Header.Get("Content-Type")))
	if state != "" {
		h.Set(HeaderCache, state)
	}
	h.Set("Content-Length", strconv.Itoa(len(raw.Body)))
	w.WriteHeader(raw.StatusCode)
	_, _ = w.Write(raw.Body)
}

// contentType is the upstream's Content-Type, or JSON when it sent none
// (every answer of the interface is JSON).
func contentType(ct string) string {
	if ct == "" {
		return "application/json"
	}
	return ct
}

// writeEnvelope writes the lookup envelope {"msg","status","data":null}.
func writeEnvelope(w http.ResponseWriter, status int, msg string) {
	body, _ := json.Marshal(struct {
		Msg    string  `json:"msg"`
		Status int     `json:"status"`
		Data   *string `json:"data"`
	}{msg, status, nil})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
