package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// envelope is the lookup API's wrapper.
func envelope(status int, msg string, data any) map[string]any {
	return map[string]any{"msg": msg, "status": status, "data": data}
}

var branches = []map[string]string{
	{"branchCode": "01", "branchName": "Архангай", "subBranchCode": "01", "subBranchName": "Эрдэнэбулган"},
	{"branchCode": "01", "branchName": "Архангай", "subBranchCode": "02", "subBranchName": "Батцэнгэл"},
	{"branchCode": "25", "branchName": "Баянзүрх", "subBranchCode": "01", "subBranchName": "1-р хороо"},
	{"branchCode": "26", "branchName": "Сүхбаатар", "subBranchCode": "04", "subBranchName": "4-р хороо"},
	{"branchCode": "34", "branchName": "Хан-Уул", "subBranchCode": "11", "subBranchName": "11-р хороо"},
}

var productTaxCodes = []map[string]any{
	{"taxProductCode": "6011100", "taxProductName": "Эмийн бүтээгдэхүүн", "taxTypeCode": json.Number("305"),
		"taxTypeName": "VAT_FREE", "startDate": "2023-01-01 00:00:00", "endDate": nil},
	{"taxProductCode": "64111102", "taxProductName": "Экспортын бараа", "taxTypeCode": json.Number("447"),
		"taxTypeName": "VAT_ZERO", "startDate": "2022-07-01 00:00:00", "endDate": "2025-12-31 23:59:59"},
	{"taxProductCode": "6111100", "taxProductName": "Ном, сурах бичиг", "taxTypeCode": json.Number("305"),
		"taxTypeName": "VAT_FREE", "startDate": "2021-01-01 00:00:00", "endDate": nil},
}

// merchants: one VAT payer, one citizen who is not (nulls), one government
// body.
var merchants = map[string]map[string]any{
	"5317878": {"name": "Тест Худалдаа ХХК", "freeProject": false, "cityPayer": true, "vatPayer": true,
		"found": true, "vatpayerRegisteredDate": "2016-03-01 00:00:00", "isGovernment": false},
	"37900846788": {"name": "Бат Болд", "freeProject": false, "cityPayer": false, "vatPayer": false,
		"found": true, "vatpayerRegisteredDate": nil, "isGovernment": nil},
	"2012345": {"name": "Сумын Засаг даргын тамгын газар", "freeProject": false, "cityPayer": true,
		"vatPayer": true, "found": true, "vatpayerRegisteredDate": "2013-01-01T00:00:00+08:00", "isGovernment": true},
}

// tins maps registration numbers to TINs, sent as JSON numbers (the quirk).
var tins = map[string]json.Number{
	"2712345":    "5317878",
	"УБ90010112": "37900846788",
	"1234567":    "2012345",
}

func (s *Sim) branchInfo(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, envelope(200, "", branches))
}

func (s *Sim) productTaxCode(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, envelope(200, "", productTaxCodes))
}

func (s *Sim) merchantInfo(w http.ResponseWriter, r *http.Request) {
	m, ok := merchants[r.URL.Query().Get("tin")]
	if !ok {
		writeJSON(w, http.StatusOK, envelope(200, "", nil))
		return
	}
	writeJSON(w, http.StatusOK, envelope(200, "", m))
}

func (s *Sim) tinInfo(w http.ResponseWriter, r *http.Request) {
	tin, ok := tins[r.URL.Query().Get("regNo")]
	if !ok {
		writeJSON(w, http.StatusOK, envelope(500, "Регистрийн дугаар олдсонгүй", nil))
		return
	}
	writeJSON(w, http.StatusOK, envelope(200, "", tin))
}

// classification serves the tree: segments are codes, each the prefix of
// the next, top-down; six segments list the barcodes of a БҮНА code. A path
// that leaves the tree is an empty list, more than six segments a 404.
func (s *Sim) classification(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.EscapedPath(), "/api/info/check/barcode/v2")
	var segs []string
	for _, p := range strings.Split(strings.Trim(rest, "/"), "/") {
		if p == "" {
			continue
		}
		seg, err := url.PathUnescape(p)
		if err != nil {
			http.Error(w, "bad segment", http.StatusBadRequest)
			return
		}
		segs = append(segs, seg)
	}
	if len(segs) > 6 {
		http.NotFound(w, r)
		return
	}
	writeJSON(w, http.StatusOK, classRows(segs))
}

// classLevels: code length and name of each level of the tree.
var classLevels = []struct {
	codeLen int
	name    string
}{{1, "Салбар"}, {2, "Дэд салбар"}, {3, "Бүлэг"}, {4, "Анги"}, {5, "Дэд анги"}, {7, "БҮНА код"}}

// classRows lists the children of the path segs.
func classRows(segs []string) [][]string {
	parent := ""
	for i, seg := range segs {
		if !isChild(parent, seg, i) {
			return [][]string{}
		}
		parent = seg
	}
	if len(segs) == 6 {
		rows := make([][]string, 3)
		for i := range rows {
			bc := fmt.Sprintf("865%03d%07s", i+1, parent)
			rows[i] = []string{bc, fmt.Sprintf("Бараа %s-%d", parent, i+1), fmt.Sprintf("2024-0%d-15 10:00:00", i+1)}
		}
		return rows
	}
	lv := classLevels[len(segs)]
	var rows [][]string
	for d := 1; d <= 3; d++ {
		code := parent + fmt.Sprintf("%0*d", lv.codeLen-len(parent), d)
		rows = append(rows, []string{code, fmt.Sprintf("%s %s", lv.name, code)})
	}
	return rows
}

// isChild reports whether code is one of the children classRows lists
// under parent at depth.
func isChild(parent, code string, depth int) bool {
	lv := classLevels[depth]
	if len(code) != lv.codeLen || !strings.HasPrefix(code, parent) {
		return false
	}
	tail := code[len(parent):]
	for d := 1; d <= 3; d++ {
		if tail == fmt.Sprintf("%0*d", len(tail), d) {
			return true
		}
	}
	return false
}

// stockQRs are the excise-stamp goods by stamp QR id (getStockQr): a bare
// object, not the lookup envelope, as the vendor's description shows.
var stockQRs = map[string]map[string]any{
	"BF6B1FBA86FB4C41ADDBB01C09C024F5": {"barcode": "8656170014754", "barcodeName": "Архи Ерөөл 0.75 л",
		"cpcd": "2413150", "productTypeCode": "02", "productTypeName": "Цагаан архи, ликёр, кордиал ба спиртлэг бусад ундаа",
		"productCategory": "Эх орны үйлдвэр", "productPercent": json.Number("38"), "productSize": json.Number("750"), "unitCode": "гр"},
	"0A1B2C3D4E5F60718293A4B5C6D7E8F9": {"barcode": "4607025390015", "barcodeName": "Тамхи Esse 20ш",
		"cpcd": "2501010", "productTypeCode": "05", "productTypeName": "Тамхи", "productCategory": "Импорт",
		"productPercent": json.Number("0"), "productSize": json.Number("20"), "unitCode": "ш"},
}

// stockQr needs a bearer token (the description's security); which token
// is not checked. An unknown stamp is a 404 with the lookup envelope: what
// the live service answers is not documented.
func (s *Sim) stockQr(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
		writeJSON(w, http.StatusUnauthorized, envelope(http.StatusUnauthorized, "Unauthorized: a bearer token is required", nil))
		return
	}
	item, ok := stockQRs[r.URL.Query().Get("stockQr")]
	if !ok {
		writeJSON(w, http.StatusNotFound, envelope(http.StatusNotFound, "Тэмдгийн QR олдсонгүй", nil))
		return
	}
	writeJSON(w, http.StatusOK, item)
}

// saveOprMerchants needs X-API-KEY (any value) and a body with posNo and
// a non-empty merchantTins; it records nothing.
func (s *Sim) saveOprMerchants(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-API-KEY") == "" {
		writeJSON(w, http.StatusUnauthorized, envelope(http.StatusUnauthorized, "X-API-KEY is required", nil))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody))
	if err != nil {
		return
	}
	var req struct {
		PosNo        string   `json:"posNo"`
		MerchantTins []string `json:"merchantTins"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.PosNo == "" || len(req.MerchantTins) == 0 {
		writeJSON(w, http.StatusBadRequest, envelope(http.StatusBadRequest, "posNo and merchantTins are required", nil))
		return
	}
	out := envelope(http.StatusOK, "Мерчант бүртгэх хүсэлт амжилттай илгээгдлээ", nil)
	out["code"] = nil
	writeJSON(w, http.StatusOK, out)
}
