package sim

import "net/http"

// simAPIRoutes is the test tool's own API under /sim/, so `receiptd sim`
// can be driven with curl:
//
//	GET    /sim/faults  the faults in force, every one
//	PUT    /sim/faults  change the ones named, leave the others: {"down":true,"downFor":"30s","latency":"2s",
//	                    "errorRate":0.2,"dropRate":0.1,"rejectNext":3,"rejectMessage":"...","sendDataFail":true,
//	                    "sendDataLatency":"20s","clockSkew":"-5m","otherPace":5.5}; answers them all
//	DELETE /sim/faults  clear them all: a healthy service
//	PUT  /sim/lotteries set leftLotteries: {"left":0}; a sendData refills it
//	GET  /sim/lotteries the reserve, what other POS software spent, B2C creates refused for an empty reserve
//	GET  /sim/receipts  every issued receipt, lottery and QR data included
//	GET  /sim/deleted   the deleted ids
//	GET  /sim/requests  request counts per route
//	POST /sim/reset     forget receipts, deletes and counts
//
// A Down set through PUT closes this API's listener too: give it a downFor.
func (s *Sim) simAPIRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /sim/faults", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, s.Faults())
	})
	mux.HandleFunc("PUT /sim/faults", s.putFaults)
	mux.HandleFunc("DELETE /sim/faults", s.deleteFaults)
	mux.HandleFunc("PUT /sim/lotteries", s.putLotteries)
	mux.HandleFunc("GET /sim/lotteries", s.getLotteries)
	mux.HandleFunc("GET /sim/receipts", func(w http.ResponseWriter, _ *http.Request) {
		rs := s.Receipts()
		if rs == nil {
			rs = []Issued{}
		}
		writeJSON(w, http.StatusOK, rs)
	})
	mux.HandleFunc("GET /sim/deleted", func(w http.ResponseWriter, _ *http.Request) {
		d := s.Deleted()
		if d == nil {
			d = []string{}
		}
		writeJSON(w, http.StatusOK, d)
	})
	mux.HandleFunc("GET /sim/requests", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		counts := make(map[string]int, len(s.counts))
		for k, v := range s.counts {
			counts[k] = v
		}
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, counts)
	})
	mux.HandleFunc("POST /sim/reset", func(w http.ResponseWriter, _ *http.Request) {
		s.Reset()
		w.WriteHeader(http.StatusNoContent)
	})
}
