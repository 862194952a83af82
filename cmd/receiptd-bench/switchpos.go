package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/open-telemetry/opamp-go/server"
	"github.com/open-telemetry/opamp-go/server/types"

	"github.com/receiptd/receiptd/internal/sim"
)

// This file holds the switch step's parts outside the till: the POS
// clients, the head office (an OpAMP server on opamp-go's server package,
// as internal/control/controltest builds one) and the file server the
// release is downloaded from.

// posAttempt is one POST /rest/receipt as a POS client made it.
type posAttempt struct {
	client     int
	keepAlive  bool
	sale       string // billIdSuffix: one sale, posted again only after a failure
	retry      bool   // the same sale again after an attempt got no answer
	start, end time.Time
	status     int
	queueID    string
	replayed   bool // Idempotent-Replayed: answered from the sale's entry
	err        error
	refused    bool // ECONNREFUSED
	wrote      bool // the request was written whole before err
	reused     bool // the last connection used was a kept-alive one
	conns      int  // connections used: 2 when Go's transport sent it again
}

func (a posAttempt) kind() string {
	if a.keepAlive {
		return "keep-alive"
	}
	return "fresh connection"
}

// posLoad is N POS clients posting sales without Prefer (so each answer
// waits for the tax service's, up to accept.wait), every client its next
// sale as soon as the last is answered (or after pause). Even-numbered clients open a
// fresh connection for every sale; odd ones keep theirs alive.
type posLoad struct {
	url   string
	pause time.Duration
	stop  chan struct{}
	wg    sync.WaitGroup

	mu       sync.Mutex
	attempts []posAttempt
}

func startPOS(url string, clients int, pause time.Duration) *posLoad {
	l := &posLoad{url: url, pause: pause, stop: make(chan struct{})}
	for i := range clients {
		keep := i%2 == 1
		tr := &http.Transport{DisableKeepAlives: !keep, MaxIdleConnsPerHost: 1}
		c := &http.Client{Timeout: 30 * time.Second, Transport: tr}
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			defer tr.CloseIdleConnections()
			l.clientLoop(c, i, keep)
		}()
	}
	return l
}

// clientLoop posts sales until stop. A sale that got no answer (refused,
// or the connection closed) is posted once more, as a POS does: answered
// from its entry when the first reached the till.
func (l *posLoad) clientLoop(c *http.Client, id int, keep bool) {
	for i := 0; ; i++ {
		select {
		case <-l.stop:
			return
		default:
		}
		sale := fmt.Sprintf("sw%d-%06d", id, i)
		a := postTracedSale(c, l.url, sale)
		a.client, a.keepAlive = id, keep
		l.record(a)
		if a.err != nil {
			r := postTracedSale(c, l.url, sale)
			r.client, r.keepAlive, r.retry = id, keep, true
			l.record(r)
		}
		if l.pause > 0 {
			select {
			case <-l.stop:
				return
			case <-time.After(l.pause):
			}
		}
	}
}

func (l *posLoad) record(a posAttempt) {
	l.mu.Lock()
	l.attempts = append(l.attempts, a)
	l.mu.Unlock()
}

// finish stops the clients, waits for their last answers and returns
// every attempt.
func (l *posLoad) finish() []posAttempt {
	close(l.stop)
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.attempts
}

// postTracedSale posts one sale without Idempotency-Key or Prefer, as a POS
// that knows neither does; the till deduplicates it by its billIdSuffix.
// Without the key Go's transport never sends the POST again by itself
// once any of it was written (it does when nothing was: conns 2).
func postTracedSale(c *http.Client, url, sale string) posAttempt {
	a := posAttempt{sale: sale}
	trace := &httptrace.ClientTrace{
		GotConn:      func(i httptrace.GotConnInfo) { a.conns++; a.reused = i.Reused; a.wrote = false },
		WroteRequest: func(i httptrace.WroteRequestInfo) { a.wrote = i.Err == nil },
	}
	ctx := httptrace.WithClientTrace(context.Background(), trace)
	a.start = time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/rest/receipt", bytes.NewReader(sim.SampleReceipt("B1", sale)))
	if err != nil {
		a.err, a.end = err, time.Now()
		return a
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		a.err, a.end = err, time.Now()
		a.refused = errors.Is(err, syscall.ECONNREFUSED)
		return a
	}
	_, err = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	a.end = time.Now()
	if err != nil { // the answer's head came, its body did not
		a.err = fmt.Errorf("read the answer: %w", err)
		return a
	}
	a.status, a.queueID = resp.StatusCode, resp.Header.Get("X-Queue-Id")
	a.replayed = resp.Header.Get("Idempotent-Replayed") == "true"
	return a
}

// pkgEvent is a change of what the till reported of its receiptd package
// or its version, as the head office received it.
type pkgEvent struct {
	at                    time.Time
	uid                   string
	status                string // PackageStatusEnum without its prefix
	has, offered, version string // agent_has_version, server_offered_version, service.version
	percent               float64
	message               string
}

func (e pkgEvent) same(o pkgEvent) bool {
	return e.uid == o.uid && e.status == o.status && e.has == o.has && e.offered == o.offered &&
		e.version == o.version && e.message == o.message && e.percent == o.percent
}

// headOffice is an OpAMP server that records every change of each till's
// receiptd package status and offers one release: pushed at once over
// WebSocket, and with every answer until the till reports statuses for
// its all_packages_hash.
type headOffice struct {
	srv server.OpAMPServer

	mu       sync.Mutex
	caps     map[string]uint64
	last     map[string]pkgEvent
	events   []pkgEvent
	conns    map[string]types.Connection
	open     map[types.Connection]struct{}
	connects int
	offer    *protobufs.PackagesAvailable
}

func startHeadOffice() (*headOffice, error) {
	h := &headOffice{srv: server.New(nil), caps: map[string]uint64{}, last: map[string]pkgEvent{},
		conns: map[string]types.Connection{}, open: map[types.Connection]struct{}{}}
	err := h.srv.Start(server.StartSettings{ListenEndpoint: "127.0.0.1:0", Settings: server.Settings{
		Callbacks: types.Callbacks{OnConnecting: func(*http.Request) types.ConnectionResponse {
			return types.ConnectionResponse{Accept: true, ConnectionCallbacks: types.ConnectionCallbacks{
				OnConnected: func(_ context.Context, c types.Connection) {
					h.mu.Lock()
					h.open[c] = struct{}{}
					h.connects++
					h.mu.Unlock()
				},
				OnConnectionClose: func(c types.Connection) {
					h.mu.Lock()
					delete(h.open, c)
					h.mu.Unlock()
				},
				OnMessage: h.onMessage,
			}}
		}},
	}})
	if err != nil {
		return nil, fmt.Errorf("switch: start the head office's OpAMP server: %w", err)
	}
	return h, nil
}

func (h *headOffice) url() string { return "ws://" + h.srv.Addr().String() + "/v1/opamp" }

func (h *headOffice) onMessage(_ context.Context, conn types.Connection, m *protobufs.AgentToServer) *protobufs.ServerToAgent {
	u, err := uuid.FromBytes(m.GetInstanceUid())
	uid := u.String()
	if err != nil {
		uid = string(m.GetInstanceUid())
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.conns[uid] = conn
	if m.Capabilities != 0 {
		h.caps[uid] = m.Capabilities
	}
	e := h.last[uid]
	e.uid = uid
	if d := m.GetAgentDescription(); d != nil {
		for _, kv := range slices.Concat(d.IdentifyingAttributes, d.NonIdentifyingAttributes) {
			if kv.Key == "service.version" {
				e.version = kv.GetValue().GetStringValue()
			}
		}
	}
	if ps := m.GetPackageStatuses(); ps != nil {
		p := ps.GetPackages()["receiptd"]
		e.status = strings.TrimPrefix(p.GetStatus().String(), "PackageStatusEnum_")
		e.has, e.offered, e.message = p.GetAgentHasVersion(), p.GetServerOfferedVersion(), p.GetErrorMessage()
		e.percent = p.GetDownloadDetails().GetDownloadPercent()
	}
	if prev, ok := h.last[uid]; !ok || !e.same(prev) {
		e.at = time.Now()
		h.events = append(h.events, e)
		h.last[uid] = e
	}
	resp := &protobufs.ServerToAgent{InstanceUid: m.GetInstanceUid()}
	if h.offer != nil && !bytes.Equal(m.GetPackageStatuses().GetServerProvidedAllPackagesHash(), h.offer.AllPackagesHash) {
		resp.PackagesAvailable = h.offer
	}
	return resp
}

// offerRelease offers version as the file at url (body's bytes, sig its
// .minisig) to every till connected, at once.
func (h *headOffice) offerRelease(url, version string, body, sig []byte) {
	sum := sha256.Sum256(body)
	pa := &protobufs.PackagesAvailable{AllPackagesHash: sum[:],
		Packages: map[string]*protobufs.PackageAvailable{"receiptd": {
			Type: protobufs.PackageType_PackageType_TopLevel, Version: version, Hash: sum[:],
			File: &protobufs.DownloadableFile{DownloadUrl: url, ContentHash: sum[:], Signature: sig},
		}}}
	h.mu.Lock()
	h.offer = pa
	var push []types.Connection
	var uids []string
	for uid, c := range h.conns {
		push, uids = append(push, c), append(uids, uid)
	}
	h.mu.Unlock()
	for i, c := range push {
		u, _ := uuid.Parse(uids[i])
		_ = c.Send(context.Background(), &protobufs.ServerToAgent{InstanceUid: u[:], PackagesAvailable: pa})
	}
}

// till returns the one till's last report, its capabilities, and how
// many tills (UIDs) reported.
func (h *headOffice) till() (pkgEvent, uint64, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for uid, e := range h.last {
		return e, h.caps[uid], len(h.last)
	}
	return pkgEvent{}, 0, 0
}

// history returns every change recorded, and how many connections were
// made.
func (h *headOffice) history() ([]pkgEvent, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]pkgEvent(nil), h.events...), h.connects
}

// close stops the server and closes the WebSocket connections it leaves
// open (http.Server.Shutdown does not close hijacked ones).
func (h *headOffice) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = h.srv.Stop(ctx)
	h.mu.Lock()
	open := make([]types.Connection, 0, len(h.open))
	for c := range h.open {
		open = append(open, c)
	}
	h.mu.Unlock()
	for _, c := range open {
		_ = c.Disconnect()
	}
}

// fileServer serves one release file over plain HTTP on 127.0.0.1, as a
// head office's file server would (a till fetches plain http only from
// loopback), with Range for a resumed download.
type fileServer struct {
	srv *http.Server
	url string

	mu       sync.Mutex
	requests int
}

func serveFile(name string, body []byte) (*fileServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("switch: file server: %w", err)
	}
	f := &fileServer{url: "http://" + ln.Addr().String() + "/" + name}
	f.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.requests++
		f.mu.Unlock()
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(body))
	})}
	go func() { _ = f.srv.Serve(ln) }()
	return f, nil
}

func (f *fileServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = f.srv.Shutdown(ctx)
}
