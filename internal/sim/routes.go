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
	handle := func(route string, h http.HandlerFunc) {
		mux.HandleFunc(route, func(w http.ResponseWriter, r *http.Request) {
			s.count(route)
			h(w, r)
		})
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
	handle(RouteClassification, s.classification)
	mux.HandleFunc(RouteClassification+"/", func(w http.ResponseWriter, r *http.Request) {
		s.count(RouteClassification)
		s.classification(w, r)
	})
	s.controlRoutes(mux)
	return mux
}

// routeOf names the route of a request that is answered before routing
// (a simulated 5xx), so that it is still counted.
func routeOf(r *http.Request) string {
	for _, route := range []string{RouteCreateReceipt, RouteDeleteReceipt, RouteInfo, RouteSendData,
		RouteBankAccounts, RouteBranchInfo, RouteProductTaxCode, RouteMerchantInfo, RouteTinInfo} {
		method, path, _ := strings.Cut(route, " ")
		if r.Method == method && r.URL.Path == path {
			return route
		}
	}
	p := r.URL.Path
	if r.Method == http.MethodGet && (p == "/api/info/check/barcode/v2" || strings.HasPrefix(p, "/api/info/check/barcode/v2/")) {
		return RouteClassification
	}
	return ""
}

func isControl(path string) bool { return strings.HasPrefix(path, "/sim/") }

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
