package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"time"
)

// Routes, as counted by Requests: method and path pattern.
const (
	RouteCreateReceipt  = "POST /rest/receipt"
	RouteDeleteReceipt  = "DELETE /rest/receipt"
	RouteInfo           = "GET /rest/info"
	RouteSendData       = "GET /rest/sendData"
	RouteBankAccounts   = "GET /rest/bankAccounts"
	RouteBranchInfo     = "GET /api/info/check/getBranchInfo"
	RouteProductTaxCode = "GET /api/receipt/receipt/getProductTaxCode"
	RouteMerchantInfo   = "GET /api/info/check/getInfo"
	RouteTinInfo        = "GET /api/info/check/getTinInfo"
	RouteClassification = "GET /api/info/check/barcode/v2"
	RouteStockQr        = "GET /api/inventory/stock/getStockQr"
	RouteSaveMerchants  = "POST /api/tpi/receipt/saveOprMerchants"
)

// ErrClosed: Start, SetFaults or UpdateFaults after Close.
var ErrClosed = errors.New("sim: closed")

// Options configures a Sim. The zero value is usable.
type Options struct {
	// Seed makes ids, lottery numbers, QR data and fault rolls
	// reproducible.
	Seed int64
	// Latency is added to every answer (on top of Faults.Latency).
	Latency time.Duration
	// Now is the clock of receipt dates; nil means time.Now.
	Now func() time.Time
	// Lotteries is the size of PosAPI's lottery reserve: leftLotteries at
	// start and after each sendData. Zero means DefaultLotteries.
	Lotteries int
}

// DefaultLotteries is the reserve when Options.Lotteries is zero.
const DefaultLotteries = 100000

// Issued is one receipt the simulator issued (including those whose answer
// was then dropped).
type Issued struct {
	ID           string          `json:"id"`
	BillIDSuffix string          `json:"billIdSuffix"`
	MerchantTin  string          `json:"merchantTin"`
	PosNo        string          `json:"posNo"`
	Status       string          `json:"status"`
	Lottery      string          `json:"lottery"`
	QRData       string          `json:"qrData"`
	Date         string          `json:"date"`
	Body         json.RawMessage `json:"body"` // the create request as received
	Dropped      bool            `json:"dropped"`
	At           time.Time       `json:"at"`
}

// Sim is the simulator. Create it with New.
type Sim struct {
	opts  Options
	now   func() time.Time
	mux   *http.ServeMux
	posID int64

	mu       sync.Mutex // guards everything below up to srvMu
	rng      *rand.Rand
	faults   Faults
	receipts []Issued
	byID     map[string]int // receipt id → index in receipts
	deleted  []string
	counts   map[string]int
	unsent   int       // receipts issued since the last sendData
	lastSent time.Time // the last sendData (New's time before any), on the skewed clock
	// left is leftLotteries: the reserve counts down with each B2C
	// receipt and is refilled to reserve by each sendData.
	left, reserve int
	sendDataOK    int    // successful sendData calls
	others        others // other POS software spending the reserve (shared.go)

	srvMu     sync.Mutex // guards the listener state; never held with mu while waiting
	addr      string
	srv       *http.Server
	serveDone chan struct{}
	upTimer   *time.Timer
	closed    bool

	timers   sync.WaitGroup // the DownFor timer callback
	inflight inflight       // running handlers
}

// inflight counts running handlers. Not a WaitGroup: a connection accepted
// just before Close may start its handler while Close waits, which a
// WaitGroup forbids.
type inflight struct {
	mu   sync.Mutex
	n    int
	zero sync.Cond
}

func (f *inflight) enter() {
	f.mu.Lock()
	f.n++
	f.mu.Unlock()
}

func (f *inflight) leave() {
	f.mu.Lock()
	f.n--
	if f.n == 0 && f.zero.L != nil {
		f.zero.Broadcast()
	}
	f.mu.Unlock()
}

func (f *inflight) wait() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.zero.L == nil {
		f.zero.L = &f.mu
	}
	for f.n > 0 {
		f.zero.Wait()
	}
}

// New returns a Sim; it listens only after Start.
func New(opts Options) *Sim {
	s := &Sim{opts: opts, now: opts.Now, byID: map[string]int{}, counts: map[string]int{}}
	if s.now == nil {
		s.now = time.Now
	}
	s.rng = rand.New(rand.NewPCG(uint64(opts.Seed), uint64(opts.Seed)^0x9e3779b97f4a7c15))
	s.posID = 10000000 + s.rng.Int64N(90000000)
	s.lastSent = s.now()
	s.reserve = opts.Lotteries
	if s.reserve <= 0 {
		s.reserve = DefaultLotteries
	}
	s.left = s.reserve
	s.mux = s.routes()
	return s
}

// Handler returns the simulator's handler: every receipt and lookup route,
// and its own API under /sim/. Used without Start (in an httptest
// server, say), Faults.Down makes it close each connection unanswered.
func (s *Sim) Handler() http.Handler { return http.HandlerFunc(s.serve) }

// Start listens on addr ("127.0.0.1:0" picks a port) and serves until
// Close. Down faults later close and reopen this same address.
func (s *Sim) Start(addr string) error {
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.addr != "" {
		return fmt.Errorf("sim: already started on %s", s.addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("sim: listen %s: %w", addr, err)
	}
	s.addr = ln.Addr().String()
	s.serveOn(ln)
	if s.Faults().Down {
		s.stopServing()
	}
	return nil
}

// Addr returns the listening address ("" before Start).
func (s *Sim) Addr() string {
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	return s.addr
}

// URL returns "http://" + Addr(), the base URL for both upstreams.
func (s *Sim) URL() string { return "http://" + s.Addr() }

// Close stops listening, closes all connections and waits for running
// handlers. It may be called more than once.
func (s *Sim) Close() error {
	s.srvMu.Lock()
	if !s.closed {
		s.closed = true
		s.stopTimer()
		s.stopServing()
	}
	s.srvMu.Unlock()
	s.timers.Wait()
	s.inflight.wait()
	return nil
}

// serveOn starts the serving goroutine; srvMu held.
func (s *Sim) serveOn(ln net.Listener) {
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	s.srv, s.serveDone = srv, done
	go func() {
		defer close(done)
		_ = srv.Serve(ln) // returns ErrServerClosed on stopServing
	}()
}

// stopServing closes the listener and every connection, and waits for the
// serving goroutine; srvMu held.
func (s *Sim) stopServing() {
	if s.srv == nil {
		return
	}
	_ = s.srv.Close()
	<-s.serveDone
	s.srv, s.serveDone = nil, nil
}

// relisten reopens the address after a Down fault; srvMu held.
func (s *Sim) relisten() error {
	if s.addr == "" || s.srv != nil || s.closed {
		return nil
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("sim: listen again on %s: %w", s.addr, err)
	}
	s.serveOn(ln)
	return nil
}

func (s *Sim) stopTimer() {
	if s.upTimer != nil && s.upTimer.Stop() {
		s.timers.Done()
	}
	s.upTimer = nil
}

// SetFaults replaces the injected faults. Entering Down closes the listener
// (connections are refused) and every open connection; leaving it listens
// again on the same address, which is the only way SetFaults can fail.
// Down with DownFor > 0 ends by itself after DownFor, counted from this
// call.
func (s *Sim) SetFaults(f Faults) error {
	_, err := s.changeFaults(func(cur *Faults) error { *cur = f; return nil }, true, nil)
	return err
}

// UpdateFaults changes only what change sets, on the faults in force, as
// one step: a RejectNext being used up meanwhile, or another change, is
// not lost. change runs with the Sim's lock held, so it must not call the
// Sim; an error from it, or faults that do not validate, change nothing.
// It returns the faults now in force. Down behaves as in SetFaults; an
// outage's DownFor timer goes on running when change leaves Down and
// DownFor as they were.
func (s *Sim) UpdateFaults(change func(*Faults) error) (Faults, error) {
	return s.changeFaults(change, false, nil)
}

// changeFaults is SetFaults (restart: a Down's timer starts again) and
// UpdateFaults. inForce, if not nil, is called with the faults once they
// are in force and before an outage closes the connections: the /sim/
// API answers there, so that its answer is true when the caller reads it.
func (s *Sim) changeFaults(change func(*Faults) error, restart bool, inForce func(Faults)) (Faults, error) {
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	if s.closed {
		return Faults{}, ErrClosed
	}
	s.mu.Lock()
	old, f := s.faults, s.faults
	if err := change(&f); err != nil {
		s.mu.Unlock()
		return old, err
	}
	if err := f.validate(); err != nil {
		s.mu.Unlock()
		return old, err
	}
	s.spendOthersLocked() // the pace in force until now applies until now
	s.faults = f
	s.mu.Unlock()
	if inForce == nil {
		inForce = func(Faults) {}
	}
	if !restart && old.Down && f.Down && old.DownFor == f.DownFor {
		inForce(f)
		return f, nil // the outage goes on as it was
	}
	s.stopTimer()
	if !f.Down {
		if err := s.relisten(); err != nil {
			return f, err
		}
		inForce(f)
		return f, nil
	}
	inForce(f) // while this connection is still open
	s.stopServing()
	if f.DownFor > 0 {
		s.timers.Add(1)
		s.upTimer = time.AfterFunc(f.DownFor, s.endDown)
	}
	return f, nil
}

// relistenEvery is how often a sim whose outage ended tries its address
// again while another program holds it.
const relistenEvery = 250 * time.Millisecond

// endDown is the DownFor timer's callback: the outage ends once the sim
// listens on its address again. While another program holds the port
// (taken during the outage) the sim stays down, as Faults says, and tries
// again every relistenEvery until it can, or until SetFaults or Close.
func (s *Sim) endDown() {
	defer s.timers.Done()
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	if s.closed {
		return
	}
	s.upTimer = nil
	s.mu.Lock()
	down := s.faults
	s.faults.Down, s.faults.DownFor = false, 0
	s.mu.Unlock()
	if err := s.relisten(); err != nil {
		s.mu.Lock()
		s.faults = down
		s.mu.Unlock()
		s.timers.Add(1)
		s.upTimer = time.AfterFunc(relistenEvery, s.endDown)
	}
}

// Faults returns the faults in force.
func (s *Sim) Faults() Faults {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.faults
}

// Receipts returns a copy of every receipt issued, in order.
func (s *Sim) Receipts() []Issued {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Issued(nil), s.receipts...)
}

// Deleted returns the ids deleted, in order.
func (s *Sim) Deleted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.deleted...)
}

// Requests returns how many requests reached route (a Route... constant),
// faulted ones included, since New or Reset.
func (s *Sim) Requests(route string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[route]
}

// Reset forgets issued and deleted receipts and the request counts; the
// faults stay as they are.
func (s *Sim) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.receipts, s.deleted, s.unsent = nil, nil, 0
	s.byID = map[string]int{}
	s.counts = map[string]int{}
}

// roll reports whether an event of probability p happens.
func (s *Sim) roll(p float64) bool {
	if p <= 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rng.Float64() < p
}

// wait sleeps for the configured latency, or until the request goes away.
func wait(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
