package sim

import (
	"encoding/json"
	"net/http"
)

// The PosAPI instance the simulator plays: its operator, the merchants
// registered on it and their customers, as /rest/info lists them (the
// live shape: the SDK's recorded staging answer).
const (
	operatorName = "receiptd simulator"
	operatorTIN  = "5317878"
	simPosNo     = "SIM-001"
	posVersion   = "3.2.39"
)

// posDir is where PosAPI runs on a Windows till (appInfo's directories).
const posDir = `C:\Program Files (x86)\PosAPI`

// registered are the merchants of this PosAPI instance, in /rest/info
// order, each with the customers it may issue B2B receipts to.
var registered = []struct {
	tin       string
	customers []string
}{
	{operatorTIN, []string{operatorTIN, "37900846788", "30000000000"}},
	{SampleMerchantTin, []string{SampleMerchantTin, "30000000000", "2012345"}},
}

// customerNames are the names of customer TINs the lookup API does not know.
var customerNames = map[string]string{"30000000000": "ЭЦСИЙН ХЭРЭГЛЭГЧ"}

// bankAccounts are the accounts registered per merchant TIN
// (/rest/bankAccounts); a sub-receipt's bankAccountNo is matched against
// them for its bankAccountId.
var bankAccounts = map[string][]map[string]any{
	operatorTIN: {
		{"id": json.Number("1000"), "tin": operatorTIN, "bankAccountNo": "5012345678",
			"bankAccountName": "Тест Худалдаа ХХК", "bankId": json.Number("5"), "iBan": "MN580005005012345678", "bankName": "Хаан банк"},
		{"id": json.Number("1001"), "tin": operatorTIN, "bankAccountNo": "499037985",
			"bankAccountName": "Тест Худалдаа ХХК харилцах", "bankId": json.Number("0"), "iBan": "", "bankName": ""},
	},
	SampleMerchantTin: {
		{"id": json.Number("302193"), "tin": SampleMerchantTin, "bankAccountNo": "4990037827",
			"bankAccountName": "Бат Болд", "bankId": json.Number("4"), "iBan": "10001004990037827", "bankName": "Голомт банк"},
	},
}

// bankAccountID is the id of merchant tin's account no, or 0 when the
// sub-receipt names none or one not registered.
func bankAccountID(tin, no string) json.Number {
	for _, a := range bankAccounts[tin] {
		if no != "" && a["bankAccountNo"] == no {
			return a["id"].(json.Number)
		}
	}
	return "0"
}

func (s *Sim) info(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	s.spendOthersLocked()
	left, lastSent := s.left, s.lastSent
	s.mu.Unlock()
	merchantsOut := make([]any, 0, len(registered))
	for _, m := range registered {
		customers := make([]any, 0, len(m.customers))
		for _, c := range m.customers {
			customers = append(customers, map[string]any{"tin": c, "name": partyName(c), "vatPayer": vatPayer(c)})
		}
		merchantsOut = append(merchantsOut, map[string]any{
			"tin": m.tin, "name": partyName(m.tin), "vatPayer": vatPayer(m.tin), "customers": customers,
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"operatorName": operatorName, "operatorTIN": operatorTIN, "posId": s.posID, "posNo": simPosNo,
		"version": posVersion, "lastSentDate": lastSent.In(ulaanbaatar).Format(dateLayout), "leftLotteries": left,
		"appInfo": map[string]any{
			"applicationDir": posDir, "currentDir": posDir, "database": "QSQLITE", "database-host": "127.0.0.1",
			"supported-databases": []string{"QSQLITE", "QMYSQL", "QSQLSERVER", "QPSQL"}, "workDir": posDir,
		},
		"paymentTypes": []any{
			map[string]string{"code": "CASH", "name": "Бэлэнээр"},
			map[string]string{"code": "PAYMENT_CARD", "name": "Төлбөрийн карт"},
		},
		"merchants": merchantsOut,
		"condition": map[string]bool{"isMedicine": false},
	})
}

// partyName is a TIN's name as the lookup API knows it.
func partyName(tin string) string {
	if m, ok := merchants[tin]; ok {
		return m["name"].(string)
	}
	return customerNames[tin]
}

func vatPayer(tin string) bool {
	v, _ := merchants[tin]["vatPayer"].(bool)
	return v
}

func (s *Sim) bankAccounts(w http.ResponseWriter, r *http.Request) {
	accts := bankAccounts[r.URL.Query().Get("tin")]
	if accts == nil {
		accts = []map[string]any{}
	}
	writeJSON(w, http.StatusOK, accts)
}
