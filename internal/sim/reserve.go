package sim

import (
	"encoding/json"
	"io"
	"net/http"
	"time"
)

// ReserveEmptyMessage is the simulator's refusal of a B2C receipt while
// the lottery reserve is empty (HTTP 400, status ERROR, nothing issued).
// PosAPI's own wording is not published (docs/decisions/posapi.md); this
// stand-in names the lottery ("сугалаа") and sendData as the live message
// is expected to, and receiptd must not depend on its exact text.
const ReserveEmptyMessage = "Сугалааны нөөц дууссан байна (no lotteries left): send the data first (sendData)"

// SendDataFailMessage is sendData's answer under Faults.SendDataFail.
const SendDataFailMessage = "simulated: could not send the data to the tax authority"

// clockLocked is the simulated service's clock: Options.Now shifted by
// Faults.ClockSkew; mu held.
func (s *Sim) clockLocked() time.Time { return s.now().Add(s.faults.ClockSkew) }

// LeftLotteries returns the reserve (leftLotteries of /rest/info).
func (s *Sim) LeftLotteries() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spendOthersLocked()
	return s.left
}

// SetLeftLotteries sets the reserve to n (at least 0) until the next B2C
// receipt or sendData; a sendData refills it to Options.Lotteries.
func (s *Sim) SetLeftLotteries(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spendOthersLocked()
	s.left = max(n, 0)
}

// SendDataCalls returns how many sendData calls succeeded (refilled the
// reserve).
func (s *Sim) SendDataCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sendDataOK
}

// sendData sends "the data": the reserve is refilled and lastSentDate is
// now, unless Faults.SendDataFail; Faults.SendDataLatency delays the
// answer (the refill happens after the delay, as a real upload's would).
func (s *Sim) sendData(w http.ResponseWriter, r *http.Request) {
	f := s.Faults()
	end := s.holdCreates()
	defer end()
	wait(r.Context(), f.SendDataLatency)
	if r.Context().Err() != nil {
		return // the caller went away: nothing was sent
	}
	if f.SendDataFail {
		writeJSON(w, http.StatusInternalServerError, errorBody(SendDataFailMessage))
		return
	}
	s.mu.Lock()
	s.spendOthersLocked()
	sent := s.unsent
	s.unsent = 0
	s.lastSent = s.clockLocked()
	s.left = s.reserve
	s.sendDataOK++
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"status": "SUCCESS", "message": "", "sent": sent})
}

// putLotteries is PUT /sim/lotteries {"left":N}: set the reserve.
func (s *Sim) putLotteries(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<12))
	if err != nil {
		return
	}
	var req struct {
		Left *int `json:"left"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Left == nil || *req.Left < 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": `want {"left":N}, N >= 0`})
		return
	}
	s.SetLeftLotteries(*req.Left)
	writeJSON(w, http.StatusOK, map[string]int{"left": s.LeftLotteries()})
}
