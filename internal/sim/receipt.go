package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// dateLayout is the upstream's date format, in Ulaanbaatar time (UTC+8).
const dateLayout = "2006-01-02 15:04:05"

var ulaanbaatar = time.FixedZone("Asia/Ulaanbaatar", 8*60*60) // no tzdata needed; no DST

const maxRequestBody = 4 << 20

var (
	receiptTypes = set("B2C_RECEIPT", "B2B_RECEIPT", "B2C_INVOICE", "B2B_INVOICE")
	taxTypes     = set("VAT_ABLE", "VAT_FREE", "VAT_ZERO", "NO_VAT", "NOT_VAT")
	paymentCodes = set("CASH", "PAYMENT_CARD")
	paymentStats = set("PAID", "PAY", "REVERSED", "ERROR")
)

func set(vs ...string) map[string]bool {
	m := make(map[string]bool, len(vs))
	for _, v := range vs {
		m[v] = true
	}
	return m
}

// errorBody is PosAPI's rejection.
func errorBody(msg string) map[string]any {
	return map[string]any{"status": "ERROR", "message": msg}
}

func (s *Sim) createReceipt(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody))
	if err != nil {
		return // the client went away
	}
	if msg, ok := s.takeReject(); ok {
		writeJSON(w, http.StatusBadRequest, errorBody(msg))
		return
	}
	req, err := decodeObject(body)
	if err == nil {
		err = validateReceipt(req)
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody(err.Error()))
		return
	}
	if !s.waitSendData(r.Context()) {
		return // the client went away while PosAPI was sending
	}
	resp, issued, ok := s.issue(req, body)
	if !ok {
		writeJSON(w, http.StatusBadRequest, errorBody(ReserveEmptyMessage))
		return
	}
	if s.roll(s.Faults().DropRate) {
		s.markDropped(issued.ID)
		drop(w)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// issue records a valid receipt and builds the answer: the request minus
// billIdSuffix, plus what the service adds. A B2C receipt while the
// lottery reserve is empty is not issued (false).
func (s *Sim) issue(req map[string]any, body []byte) (map[string]any, Issued, bool) {
	status := "SUCCESS"
	if pays, ok := req["payments"].([]any); ok {
		for _, p := range pays {
			if pm, ok := p.(map[string]any); ok && pm["status"] == "PAY" {
				status = "PAYMENT"
			}
		}
	}
	b2c := strings.HasPrefix(str(req["type"]), "B2C")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spendOthersLocked()
	if b2c && s.left <= 0 {
		s.others.refused++
		return nil, Issued{}, false
	}
	date := s.clockLocked().In(ulaanbaatar).Format(dateLayout)
	is := Issued{ID: s.digits(33), BillIDSuffix: str(req["billIdSuffix"]), MerchantTin: str(req["merchantTin"]),
		PosNo: str(req["posNo"]), Status: status, QRData: s.digits(120),
		Date: date, Body: bytes.Clone(body), At: s.now()}
	if b2c {
		is.Lottery = "SN " + s.digits(8)
		s.left--
	}
	subs, _ := req["receipts"].([]any)
	for _, sub := range subs {
		sm := sub.(map[string]any) // validated
		sm["id"] = s.digits(33)
		sm["bankAccountId"] = bankAccountID(str(sm["merchantTin"]), str(sm["bankAccountNo"]))
	}
	delete(req, "billIdSuffix")
	req["id"], req["posId"], req["status"], req["message"] = is.ID, json.Number(strconv.FormatInt(s.posID, 10)), status, ""
	req["qrData"], req["lottery"], req["date"], req["easy"], req["version"] = is.QRData, is.Lottery, is.Date, false, posVersion
	s.byID[is.ID] = len(s.receipts)
	s.receipts = append(s.receipts, is)
	s.unsent++
	return req, is, true
}

func (s *Sim) markDropped(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i, ok := s.byID[id]; ok {
		s.receipts[i].Dropped = true
	}
}

// digits returns n random decimal digits, the first not zero; mu held.
func (s *Sim) digits(n int) string {
	b := make([]byte, n)
	for i := range b {
		d := s.rng.IntN(10)
		if i == 0 {
			d = 1 + s.rng.IntN(9)
		}
		b[i] = byte('0' + d)
	}
	return string(b)
}

func (s *Sim) deleteReceipt(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody))
	if err != nil {
		return
	}
	var req struct {
		ID   string `json:"id"`
		Date string `json:"date"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.ID == "" {
		writeJSON(w, http.StatusBadRequest, errorBody("id: missing"))
		return
	}
	s.mu.Lock()
	_, ok := s.byID[req.ID]
	if ok {
		delete(s.byID, req.ID)
		s.deleted = append(s.deleted, req.ID)
	}
	s.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusBadRequest, errorBody(fmt.Sprintf("receipt %s not found", req.ID)))
		return
	}
	if s.roll(s.Faults().DropRate) {
		drop(w)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// decodeObject decodes one JSON object, numbers kept as json.Number, and
// refuses trailing data.
func decodeObject(body []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, fmt.Errorf("body: not a JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("body: trailing data after the JSON object")
	}
	return m, nil
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
