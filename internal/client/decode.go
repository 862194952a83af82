package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DateLayout is the upstream's usual date format, in Ulaanbaatar time.
const DateLayout = "2006-01-02 15:04:05"

// Ulaanbaatar is the upstream's time zone as a fixed UTC+8 zone, so parsing
// works on Windows without tzdata (Mongolia has no daylight saving time).
var Ulaanbaatar = time.FixedZone("Asia/Ulaanbaatar", 8*60*60)

var localLayouts = []string{
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02",
}

// ParseTime reads an upstream date: "yyyy-MM-dd HH:mm:ss" (optionally with
// fractions, or a bare date) in Ulaanbaatar time, or ISO 8601 / RFC 3339
// with a zone.
func ParseTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	for _, l := range localLayouts {
		if t, err := time.ParseInLocation(l, s, Ulaanbaatar); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("date %q: %w", s, ErrDecode)
}

// flexString accepts a JSON string, a JSON number (kept as written) or null
// (""): the live service sends some documented strings as numbers.
type flexString string

var _ json.Unmarshaler = (*flexString)(nil)

func (f *flexString) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*f = ""
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*f = flexString(s)
	default:
		var n json.Number
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if err := dec.Decode(&n); err != nil {
			return fmt.Errorf("want string or number, got %.20q", b)
		}
		*f = flexString(n.String())
	}
	return nil
}

// nullTime is a date that may be null, in either wire format.
type nullTime struct{ t *time.Time }

var _ json.Unmarshaler = (*nullTime)(nil)

func (n *nullTime) UnmarshalJSON(b []byte) error {
	var s flexString
	if err := s.UnmarshalJSON(b); err != nil {
		return err
	}
	if s == "" {
		n.t = nil
		return nil
	}
	t, err := ParseTime(string(s))
	if err != nil {
		return err
	}
	n.t = &t
	return nil
}

// Envelope is the wrapper of every lookup answer but the classification.
type Envelope struct {
	Msg    string
	Status int             // 0 when absent
	Data   json.RawMessage // nil when absent or null
}

// DecodeEnvelope decodes a lookup envelope. status may be a number or a
// numeric string.
func DecodeEnvelope(body []byte) (Envelope, error) {
	var w struct {
		Msg    flexString      `json:"msg"`
		Status flexString      `json:"status"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return Envelope{}, fmt.Errorf("envelope: %w: %w", ErrDecode, err)
	}
	env := Envelope{Msg: string(w.Msg)}
	if w.Status != "" {
		n, err := strconv.Atoi(string(w.Status))
		if err != nil {
			return Envelope{}, fmt.Errorf("envelope status %q: %w", w.Status, ErrDecode)
		}
		env.Status = n
	}
	if len(w.Data) > 0 && !bytes.Equal(w.Data, []byte("null")) {
		env.Data = w.Data
	}
	return env, nil
}

// okData returns an envelope's data, refusing an envelope whose status says
// the upstream failed.
func okData(what string, body []byte) (json.RawMessage, error) {
	env, err := DecodeEnvelope(body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if env.Status != 0 && env.Status != 200 {
		return nil, fmt.Errorf("%s: status %d %q: %w", what, env.Status, env.Msg, ErrEnvelope)
	}
	return env.Data, nil
}

// BranchInfo is one district: its code is BranchCode + SubBranchCode.
type BranchInfo struct {
	BranchCode    string `json:"branchCode"`
	BranchName    string `json:"branchName"`
	SubBranchCode string `json:"subBranchCode"`
	SubBranchName string `json:"subBranchName"`
}

// DistrictCode is the code a receipt's districtCode carries, e.g. "0102".
func (b BranchInfo) DistrictCode() string { return b.BranchCode + b.SubBranchCode }

// DecodeBranchInfo decodes a getBranchInfo answer (the whole envelope).
func DecodeBranchInfo(body []byte) ([]BranchInfo, error) {
	data, err := okData("branch info", body)
	if err != nil || data == nil {
		return nil, err
	}
	var w []struct {
		BranchCode    flexString `json:"branchCode"`
		BranchName    flexString `json:"branchName"`
		SubBranchCode flexString `json:"subBranchCode"`
		SubBranchName flexString `json:"subBranchName"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("branch info: %w: %w", ErrDecode, err)
	}
	out := make([]BranchInfo, len(w))
	for i, b := range w {
		out[i] = BranchInfo{string(b.BranchCode), string(b.BranchName), string(b.SubBranchCode), string(b.SubBranchName)}
	}
	return out, nil
}

// ProductTaxCode is one product tax code; EndDate is nil while it is valid.
type ProductTaxCode struct {
	StartDate      time.Time
	EndDate        *time.Time
	TaxProductCode string
	TaxProductName string
	TaxTypeCode    json.Number
	TaxTypeName    string
}

// DecodeProductTaxCodes decodes a getProductTaxCode answer.
func DecodeProductTaxCodes(body []byte) ([]ProductTaxCode, error) {
	data, err := okData("product tax codes", body)
	if err != nil || data == nil {
		return nil, err
	}
	var w []struct {
		StartDate      nullTime    `json:"startDate"`
		EndDate        nullTime    `json:"endDate"`
		TaxProductCode flexString  `json:"taxProductCode"`
		TaxProductName string      `json:"taxProductName"`
		TaxTypeCode    json.Number `json:"taxTypeCode"`
		TaxTypeName    string      `json:"taxTypeName"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("product tax codes: %w: %w", ErrDecode, err)
	}
	out := make([]ProductTaxCode, len(w))
	for i, p := range w {
		out[i] = ProductTaxCode{EndDate: p.EndDate.t, TaxProductCode: string(p.TaxProductCode),
			TaxProductName: p.TaxProductName, TaxTypeCode: p.TaxTypeCode, TaxTypeName: p.TaxTypeName}
		if p.StartDate.t != nil {
			out[i].StartDate = *p.StartDate.t
		}
	}
	return out, nil
}

// MerchantInfo is a merchant as getInfo describes it. Nil pointers are the
// upstream's nulls (not a VAT payer; government status unknown).
type MerchantInfo struct {
	Name                   string
	FreeProject            bool
	CityPayer              bool
	VatPayer               bool
	Found                  bool
	VatpayerRegisteredDate *time.Time
	IsGovernment           *bool
}

// DecodeMerchantInfo decodes a getInfo answer; data null (an unknown TIN)
// gives nil and no error.
func DecodeMerchantInfo(body []byte) (*MerchantInfo, error) {
	env, err := DecodeEnvelope(body)
	if err != nil {
		return nil, fmt.Errorf("merchant info: %w", err)
	}
	if env.Data == nil {
		return nil, nil
	}
	var w struct {
		Name                   flexString `json:"name"`
		FreeProject            *bool      `json:"freeProject"`
		CityPayer              *bool      `json:"cityPayer"`
		VatPayer               *bool      `json:"vatPayer"`
		Found                  *bool      `json:"found"`
		VatpayerRegisteredDate nullTime   `json:"vatpayerRegisteredDate"`
		IsGovernment           *bool      `json:"isGovernment"`
	}
	if err := json.Unmarshal(env.Data, &w); err != nil {
		return nil, fmt.Errorf("merchant info: %w: %w", ErrDecode, err)
	}
	return &MerchantInfo{Name: string(w.Name), FreeProject: truth(w.FreeProject), CityPayer: truth(w.CityPayer),
		VatPayer: truth(w.VatPayer), Found: truth(w.Found),
		VatpayerRegisteredDate: w.VatpayerRegisteredDate.t, IsGovernment: w.IsGovernment}, nil
}

func truth(b *bool) bool { return b != nil && *b }

// DecodeTinInfo decodes a getTinInfo answer: data is the TIN, as a string or
// (the live quirk) a number, returned as written. data null is ErrNotFound.
func DecodeTinInfo(body []byte) (string, error) {
	env, err := DecodeEnvelope(body)
	if err != nil {
		return "", fmt.Errorf("tin info: %w", err)
	}
	if env.Data == nil {
		return "", fmt.Errorf("tin info: status %d %q: %w", env.Status, env.Msg, ErrNotFound)
	}
	var tin flexString
	if err := json.Unmarshal(env.Data, &tin); err != nil {
		return "", fmt.Errorf("tin info: %w: %w", ErrDecode, err)
	}
	if tin == "" {
		return "", fmt.Errorf("tin info: empty TIN: %w", ErrNotFound)
	}
	return string(tin), nil
}

// DecodeClassification decodes a classification answer: an array of rows,
// each an array of strings (numbers kept as written; [code, name], or [barcode, name,
// registered_date] at the deepest level). null is an empty list.
func DecodeClassification(body []byte) ([][]string, error) {
	var w [][]flexString
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, fmt.Errorf("classification: %w: %w", ErrDecode, err)
	}
	rows := make([][]string, len(w))
	for i, r := range w {
		rows[i] = make([]string, len(r))
		for j, cell := range r {
			rows[i][j] = string(cell)
		}
	}
	return rows, nil
}
