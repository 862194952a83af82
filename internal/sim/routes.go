package sim

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

func (s *Sim) routes() *http.ServeMux {
	mux := http.NewServeMux()
	handle := func(route string, h http.HandlerFunc, patterns ...string) {
		for _, p := range append([]string{route}, patterns...) {
			mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) { s.serveRoute(w, r, route, h) })
		}
	}
	handle(RouteCreateReceipt, s.createReceipt)
	handle(RouteDeleteReceipt, s.deleteReceipt)
	handle(RouteInfo, s.info)
	handle(RouteSendData, s.sendData)
	handle(RouteBankAccounts, s.bankAccounts)
	handle(RouteBranchInfo, s.branchInfo)
	handle(RouteProductTaxCode, s.productTaxCode)
	handle(RouteMerchantInfo, s.merchantInfo)
	handle(RouteTinInfo, s.tinInfo)
	handle(RouteClassification, s.classification, RouteClassification+"/")
	handle(RouteStockQr, s.stockQr)
	handle(RouteSaveMerchants, s.saveOprMerchants)
	s.simAPIRoutes(mux)
	return mux
}

// serveRoute counts a request to one of the service's routes, then answers
// it with a simulated 5xx (Faults.ErrorRate) or with h.
func (s *Sim) serveRoute(w http.ResponseWriter, r *http.Request, route string, h http.HandlerFunc) {
	s.count(route)
	if s.roll(s.Faults().ErrorRate) {
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, failureBody(r.URL.Path, "simulated upstream failure"))
		return
	}
	h(w, r)
}

func isSimAPI(path string) bool { return strings.HasPrefix(path, "/sim/") }

// failureBody is a simulated failure in the shape of the route's upstream.
func failureBody(path, msg string) any {
	if strings.HasPrefix(path, "/rest/") {
		return errorBody(msg)
	}
	return envelope(http.StatusServiceUnavailable, msg, nil)
}

// writeJSON writes v without HTML escaping, numbers as given.
func writeJSON(w http.ResponseWriter, code int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}
