package receipt

import (
	"encoding/json"
	"errors"
	"testing"
)

// checkRefusal asserts the contract every refusal keeps: a
// *ValidationError with at least one problem, each with a field and a
// problem, whose Error() is the first of them.
func checkRefusal(t *testing.T, err error) {
	t.Helper()
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %T %v is not a *ValidationError", err, err)
	}
	if len(ve.Errors) == 0 {
		t.Fatal("ValidationError without problems")
	}
	for _, fe := range ve.Errors {
		if fe.Field == "" || fe.Problem == "" {
			t.Fatalf("problem without field or text: %+v", fe)
		}
	}
	if err.Error() != ve.Errors[0].Field+": "+ve.Errors[0].Problem {
		t.Fatalf("Error() %q is not the first problem", err.Error())
	}
}

func FuzzParseCreate(f *testing.F) {
	f.Add([]byte(validBody))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"branchNo":"1","totalAmount":1,"merchantTin":"2","posNo":"3","type":"B2C_RECEIPT",` +
		`"billIdSuffix":"4","receipts":[{"totalAmount":1e400,"taxType":"NOT_VAT","merchantTin":"2","items":[]}]}`))
	f.Add([]byte(`{"data":` + deep(40, "[", "]") + `}`))
	f.Add([]byte("{\"a\":\"\xff\"}"))
	f.Add([]byte(`{"a":1,"a":2} x`))
	f.Add([]byte(`{"receipts":[null,{"items":[{"qty":"1","data":{"stockQR":[1]}}]}],"payments":[{"data":{}}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := ParseCreate(body)
		if err != nil {
			checkRefusal(t, err)
			return
		}
		if !json.Valid(body) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		if c.MerchantTin == "" || c.PosNo == "" || c.BillIDSuffix == "" || c.BranchNo == "" || len(c.TINs) == 0 {
			t.Fatalf("accepted without required ids: %+v", c)
		}
	})
}

func FuzzParseDelete(f *testing.F) {
	f.Add([]byte(`{"id":"Q000000000042"}`))
	f.Add([]byte(`{"id":"1","date":"2026-11-22 10:15:00"}`))
	f.Add([]byte(`{"id":"1","date":"2026-11-22T10:15:00+08:00"}`))
	f.Add([]byte(`{"id":"","date":5}`))
	f.Add([]byte(`[[[[`))
	f.Fuzz(func(t *testing.T, body []byte) {
		d, err := ParseDelete(body)
		if err != nil {
			checkRefusal(t, err)
			return
		}
		if !json.Valid(body) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		if d.ID == "" {
			t.Fatal("accepted an empty id")
		}
		if d.Date != "" && !validDate(d.Date) {
			t.Fatalf("accepted date %q", d.Date)
		}
	})
}
