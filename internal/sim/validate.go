package sim

import (
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"
)

// fields checks that obj has each field of spec ("name:kind,...") as a
// string (kind s), a number (n) or a non-empty array (a), in spec order.
func fields(path string, obj map[string]any, spec string) error {
	for _, f := range strings.Split(spec, ",") {
		name, k, _ := strings.Cut(f, ":")
		kind := k[0]
		v, ok := obj[name]
		if !ok || v == nil {
			return fmt.Errorf("%s%s: missing", path, name)
		}
		switch kind {
		case 's':
			if _, ok := v.(string); !ok {
				return fmt.Errorf("%s%s: not a string", path, name)
			}
		case 'n':
			n, ok := v.(json.Number)
			if !ok {
				return fmt.Errorf("%s%s: not a number", path, name)
			}
			if !saneNumber(string(n)) {
				return fmt.Errorf("%s%s: %s is out of range", path, name, n)
			}
		case 'a':
			if a, ok := v.([]any); !ok || len(a) == 0 {
				return fmt.Errorf("%s%s: not a non-empty array", path, name)
			}
		}
	}
	return nil
}

func enum(path string, v any, allowed map[string]bool) error {
	if s, _ := v.(string); !allowed[s] {
		return fmt.Errorf("%s: %v is not allowed", path, v)
	}
	return nil
}

// saneNumber refuses exponents that would make exact arithmetic explode
// (1e999999999).
func saneNumber(n string) bool {
	i := strings.IndexAny(n, "eE")
	if i < 0 {
		return true
	}
	exp, err := strconv.Atoi(strings.TrimPrefix(n[i+1:], "+"))
	return err == nil && exp >= -100 && exp <= 100
}

// num is an exact value of a validated number.
func num(v any) *big.Rat {
	r, ok := new(big.Rat).SetString(string(v.(json.Number)))
	if !ok {
		return new(big.Rat)
	}
	return r
}

// validateReceipt checks required fields, enumerations and that the totals
// add up exactly (math/big, never floats). It is as strict as live staging
// is known to be: the SDK's integration tests show staging refusing a
// receipt with no payments, no VAT and no district code, and issuing the
// same receipt with all three; so each of them is required here (VAT where
// a sub-receipt is VAT_ABLE, under either spelling the field notes report).
func validateReceipt(req map[string]any) error {
	err := fields("", req, "branchNo:s,totalAmount:n,districtCode:s,merchantTin:s,posNo:s,type:s,billIdSuffix:s,receipts:a,payments:a")
	if err != nil {
		return err
	}
	if err := enum("type", req["type"], receiptTypes); err != nil {
		return err
	}
	if !districtCode.MatchString(req["districtCode"].(string)) {
		return fmt.Errorf("districtCode: %q is not a district code (4 digits: branchCode and subBranchCode)", req["districtCode"])
	}
	sum := new(big.Rat)
	vatable := false
	for i, sub := range req["receipts"].([]any) {
		total, err := validateSub(fmt.Sprintf("receipts[%d].", i), sub)
		if err != nil {
			return err
		}
		sum.Add(sum, total)
		vatable = vatable || sub.(map[string]any)["taxType"] == "VAT_ABLE"
	}
	if num(req["totalAmount"]).Cmp(sum) != 0 {
		return fmt.Errorf("totalAmount: %s is not the sum of the sub-receipts' totalAmount (%s)",
			req["totalAmount"], sum.FloatString(6))
	}
	if vatable {
		if err := vat("", req); err != nil {
			return err
		}
	}
	return validatePayments(req["payments"])
}

// districtCode is branchCode + subBranchCode (field notes: "0102").
var districtCode = regexp.MustCompile(`^[0-9]{4}$`)

// vat requires a numeric totalVAT (or the totalVat spelling seen in
// production) on obj.
func vat(path string, obj map[string]any) error {
	for _, name := range []string{"totalVAT", "totalVat"} {
		if v, ok := obj[name]; ok && v != nil {
			return fields(path, obj, name+":n")
		}
	}
	return fmt.Errorf("%stotalVAT: missing (required with taxType VAT_ABLE)", path)
}

func validateSub(path string, v any) (*big.Rat, error) {
	sub, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: not an object", path[:len(path)-1])
	}
	err := fields(path, sub, "totalAmount:n,taxType:s,merchantTin:s,items:a")
	if err != nil {
		return nil, err
	}
	if err := enum(path+"taxType", sub["taxType"], taxTypes); err != nil {
		return nil, err
	}
	if sub["taxType"] == "VAT_ABLE" {
		if err := vat(path, sub); err != nil {
			return nil, err
		}
	}
	sum := new(big.Rat)
	for j, it := range sub["items"].([]any) {
		ipath := fmt.Sprintf("%sitems[%d].", path, j)
		item, ok := it.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: not an object", ipath[:len(ipath)-1])
		}
		err := fields(ipath, item, "name:s,measureUnit:s,qty:n,unitPrice:n,totalAmount:n")
		if err != nil {
			return nil, err
		}
		sum.Add(sum, num(item["totalAmount"]))
	}
	total := num(sub["totalAmount"])
	if total.Cmp(sum) != 0 {
		return nil, fmt.Errorf("%stotalAmount: %s is not the sum of its items' totalAmount (%s)",
			path, sub["totalAmount"], sum.FloatString(6))
	}
	return total, nil
}

func validatePayments(v any) error {
	pays, ok := v.([]any)
	if !ok {
		return fmt.Errorf("payments: not an array")
	}
	for i, p := range pays {
		path := fmt.Sprintf("payments[%d].", i)
		pm, ok := p.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: not an object", path[:len(path)-1])
		}
		if err := fields(path, pm, "code:s,status:s,paidAmount:n"); err != nil {
			return err
		}
		if err := enum(path+"code", pm["code"], paymentCodes); err != nil {
			return err
		}
		if err := enum(path+"status", pm["status"], paymentStats); err != nil {
			return err
		}
	}
	return nil
}
