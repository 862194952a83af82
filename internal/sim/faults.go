package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Faults are the failures the simulator injects. The zero value is a
// healthy service.
type Faults struct {
	// Down closes the listener: connections are refused.
	Down bool
	// DownFor, with Down, ends the outage by itself after this long (so an
	// outage started through the /sim/ API can end without it).
	DownFor time.Duration
	// Latency delays every answer.
	Latency time.Duration
	// ErrorRate is the share (0 to 1) of requests to the service's routes
	// answered 503 (a path the simulator does not serve gets its 404).
	ErrorRate float64
	// DropRate is the share (0 to 1) of creates and deletes that are
	// processed and recorded, after which the connection is closed without
	// an answer.
	DropRate float64
	// RejectNext is how many of the next creates are refused as the live
	// service refuses an invalid receipt: HTTP 400 with
	// {"status":"ERROR","message":RejectMessage}, nothing issued. Each
	// create that reaches the route (not one refused by Down or ErrorRate)
	// uses one; Faults reports what is left.
	RejectNext int
	// RejectMessage is the rejection's message; empty means
	// DefaultRejectMessage.
	RejectMessage string
	// SendDataFail makes GET /rest/sendData fail as PosAPI does when it
	// cannot reach the tax authority: HTTP 500 {"status":"ERROR"}, the
	// reserve and lastSentDate left as they were.
	SendDataFail bool
	// SendDataLatency delays sendData's answer (on top of Latency): the
	// live call can take as long as PosAPI's upload of its backlog.
	SendDataLatency time.Duration
	// ClockSkew shifts the simulated service's clock (may be negative):
	// the Date header of every answer, the date of issued receipts and
	// lastSentDate.
	ClockSkew time.Duration
	// OtherPace is the lotteries a second other POS software on the same
	// PosAPI spends from the reserve (a PosAPI shared by several tills).
	OtherPace float64
}

var (
	_ json.Marshaler   = Faults{}
	_ json.Unmarshaler = (*Faults)(nil)
)

// DefaultRejectMessage is the message of a forced rejection when
// Faults.RejectMessage is empty.
const DefaultRejectMessage = "simulated rejection"

// ErrBadFaults: a rate outside [0,1], a negative duration or count.
var ErrBadFaults = errors.New("sim: bad faults")

func (f Faults) validate() error {
	if f.ErrorRate < 0 || f.ErrorRate > 1 || f.DropRate < 0 || f.DropRate > 1 {
		return fmt.Errorf("%w: rates must be within [0,1]", ErrBadFaults)
	}
	if f.Latency < 0 || f.DownFor < 0 || f.SendDataLatency < 0 {
		return fmt.Errorf("%w: durations must not be negative", ErrBadFaults)
	}
	if f.RejectNext < 0 {
		return fmt.Errorf("%w: rejectNext must not be negative", ErrBadFaults)
	}
	if f.OtherPace < 0 || f.OtherPace > maxOtherPace {
		return fmt.Errorf("%w: otherPace must be within [0,%d] lotteries a second", ErrBadFaults, maxOtherPace)
	}
	return nil
}

type faultsJSON struct {
	Down      bool    `json:"down"`
	DownFor   string  `json:"downFor,omitempty"`
	Latency   string  `json:"latency,omitempty"`
	ErrorRate float64 `json:"errorRate"`
	DropRate  float64 `json:"dropRate"`
	// RejectNext and RejectMessage: see Faults.
	RejectNext    int    `json:"rejectNext,omitempty"`
	RejectMessage string `json:"rejectMessage,omitempty"`
	// SendDataFail, SendDataLatency and ClockSkew: see Faults.
	SendDataFail    bool   `json:"sendDataFail,omitempty"`
	SendDataLatency string `json:"sendDataLatency,omitempty"`
	ClockSkew       string `json:"clockSkew,omitempty"`
	// OtherPace: see Faults.
	OtherPace float64 `json:"otherPace,omitempty"`
}

// MarshalJSON writes durations as Go duration strings ("250ms").
func (f Faults) MarshalJSON() ([]byte, error) { return json.Marshal(f.toJSON()) }

func (f Faults) toJSON() faultsJSON {
	j := faultsJSON{Down: f.Down, ErrorRate: f.ErrorRate, DropRate: f.DropRate,
		RejectNext: f.RejectNext, RejectMessage: f.RejectMessage, SendDataFail: f.SendDataFail, OtherPace: f.OtherPace}
	for _, d := range []struct {
		in  time.Duration
		out *string
	}{{f.DownFor, &j.DownFor}, {f.Latency, &j.Latency}, {f.SendDataLatency, &j.SendDataLatency}, {f.ClockSkew, &j.ClockSkew}} {
		if d.in != 0 {
			*d.out = d.in.String()
		}
	}
	return j
}

// UnmarshalJSON lays the fields present in b over f: a field b does not
// name keeps its value (zero in a new Faults), which is how PUT /sim/faults
// changes only what it names. A duration given as "" is zero. On an error
// f is unchanged.
func (f *Faults) UnmarshalJSON(b []byte) error {
	j := f.toJSON()
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	out := Faults{Down: j.Down, ErrorRate: j.ErrorRate, DropRate: j.DropRate,
		RejectNext: j.RejectNext, RejectMessage: j.RejectMessage, SendDataFail: j.SendDataFail, OtherPace: j.OtherPace}
	for _, d := range []struct {
		name string
		in   string
		out  *time.Duration
	}{{"downFor", j.DownFor, &out.DownFor}, {"latency", j.Latency, &out.Latency},
		{"sendDataLatency", j.SendDataLatency, &out.SendDataLatency}, {"clockSkew", j.ClockSkew, &out.ClockSkew}} {
		if d.in == "" {
			continue
		}
		v, err := time.ParseDuration(d.in)
		if err != nil {
			return fmt.Errorf("%s: %w", d.name, err)
		}
		*d.out = v
	}
	*f = out
	return nil
}

// putFaults is PUT /sim/faults: the faults the body names change, the
// others stay (a walkthrough that makes sendData fail, then skews the
// clock, has both), as one step on the faults in force.
func (s *Sim) putFaults(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
	if err != nil {
		return
	}
	patch := func(f *Faults) error {
		if err := json.Unmarshal(body, f); err != nil {
			return fmt.Errorf("%w: %v", ErrBadFaults, err)
		}
		return nil // changeFaults validates
	}
	answered := false
	_, err = s.changeFaults(patch, false, func(f Faults) {
		// Answered once in force, and before going down closes this very
		// connection: a client that reads 200 finds the faults it asked for.
		writeJSON(w, http.StatusOK, f)
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		answered = true
	})
	switch {
	case answered:
	case errors.Is(err, ErrBadFaults):
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
	default:
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
	}
}

// deleteFaults is DELETE /sim/faults: every fault cleared.
func (s *Sim) deleteFaults(w http.ResponseWriter, _ *http.Request) {
	if err := s.SetFaults(Faults{}); err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, s.Faults())
}

// serve applies the Down and latency faults, then routes; the error rate is
// applied per route (serveRoute). The /sim/ API is never faulted.
func (s *Sim) serve(w http.ResponseWriter, r *http.Request) {
	s.inflight.enter()
	defer s.inflight.leave()
	if isSimAPI(r.URL.Path) {
		s.mux.ServeHTTP(w, r)
		return
	}
	f := s.Faults()
	if f.Down {
		drop(w)
		return
	}
	// The service's own clock, as net/http would write it, shifted.
	w.Header().Set("Date", s.now().Add(f.ClockSkew).UTC().Format(http.TimeFormat))
	wait(r.Context(), s.opts.Latency+f.Latency)
	s.mux.ServeHTTP(w, r)
}

// drop closes the connection without answering.
func drop(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler) // the server closes the connection (or resets the stream)
}

func (s *Sim) count(route string) {
	if route == "" {
		return
	}
	s.mu.Lock()
	s.counts[route]++
	s.mu.Unlock()
}

// takeReject uses one forced rejection, if any is left, and returns its
// message.
func (s *Sim) takeReject() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.faults.RejectNext <= 0 {
		return "", false
	}
	s.faults.RejectNext--
	if s.faults.RejectMessage == "" {
		return DefaultRejectMessage, true
	}
	return s.faults.RejectMessage, true
}
