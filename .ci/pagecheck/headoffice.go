package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
)

// headOffice is a stand-in for a chain's head office, for the status
// page's Head office states: it takes the till's remote write (any path
// but /v1/opamp) and its OpAMP channel over HTTP polling (/v1/opamp), and
// answers both as its mode says, set with PUT /mode:
//
//	hang    holds every request until the mode changes (the till waits
//	        for its first push, and is still connecting)
//	accept  200 with an empty body: samples accepted, and an empty
//	        ServerToAgent, which opamp-go takes as a contact
//	refuse  401, as to a wrong token
//	down    503, as a head office that is failing
//
// It checks nothing the till sends: the fleet package's tests do
// (fleet/fleettest, control/controltest).
type headOffice struct {
	mu      sync.Mutex
	mode    string
	changed chan struct{} // closed when the mode changes: hung requests go on
}

func (h *headOffice) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/mode" && r.Method == http.MethodPut {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 64))
		h.set(strings.TrimSpace(string(b)))
		return
	}
	_, _ = io.Copy(io.Discard, r.Body)
	for {
		h.mu.Lock()
		mode, changed := h.mode, h.changed
		h.mu.Unlock()
		switch mode {
		case "hang":
			select {
			case <-changed:
				continue
			case <-r.Context().Done():
				return
			}
		case "accept":
			w.WriteHeader(http.StatusOK)
		case "refuse":
			http.Error(w, "bad token", http.StatusUnauthorized)
		default:
			http.Error(w, "head office failing", http.StatusServiceUnavailable)
		}
		return
	}
}

func (h *headOffice) set(mode string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.mode = mode
	close(h.changed)
	h.changed = make(chan struct{})
}

// serveHeadOffice listens on addr in mode hang and prints its URL; it
// serves until the process is killed.
func serveHeadOffice(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Printf("head office listening on http://%s\n", ln.Addr())
	return http.Serve(ln, &headOffice{mode: "hang", changed: make(chan struct{})})
}
