package receipt

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const referenceDir = "../../docs/reference"

func readReference(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(referenceDir, file))
	require.NoError(t, err)
	return string(b)
}

// descriptionFields reads the request of POST /rest/receipt from
// posapi-3.0-fields.md: every field's path ("receipts[].items[].qty") and
// whether the vendor's description requires it (the "*").
func descriptionFields(t *testing.T) map[string]bool {
	t.Helper()
	doc := readReference(t, fieldsFile)
	start := strings.Index(doc, "## POST /rest/receipt")
	require.GreaterOrEqual(t, start, 0)
	section := doc[start:]
	section = section[strings.Index(section, "Request (application/json):"):]
	section = section[:strings.Index(section, "Answer 200")]
	line := regexp.MustCompile("^( *)- `([^`]+)`(\\*?): (.*)$")
	fields := map[string]bool{}
	var stack []string // the path at each depth
	for _, l := range strings.Split(section, "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		depth := len(m[1]) / 2
		stack = stack[:depth]
		path := strings.Join(append(slices.Clone(stack), m[2]), ".")
		fields[path] = m[3] == "*"
		name := m[2]
		if strings.HasPrefix(m[4], "array") {
			name += "[]"
		}
		stack = append(stack, name)
	}
	require.Greater(t, len(fields), 40, "the description's request fields were not read")
	return fields
}

// TestRulesCoverTheDescription: every field the vendor's description
// requires has a rule that refuses it missing, or a waiver saying why the
// world wins; and every rule is about a field the description lists. It
// fails when the description gains a required field without a rule.
func TestRulesCoverTheDescription(t *testing.T) {
	t.Parallel()
	fields := descriptionFields(t)
	for path, required := range fields {
		if !required {
			continue
		}
		r := ruleNamed(nameOf(path, "required"))
		waived := slices.ContainsFunc(waivers, func(w Waiver) bool { return w.Path == path })
		require.True(t, (r != nil && r.Path == path) != waived,
			"%s is required by the description: it needs a rule %q or a waiver, not both", path, nameOf(path, "required"))
	}
	for _, r := range rules {
		_, listed := fields[r.Path]
		require.True(t, listed, "rule %s is about %s, which the description does not list", r.Name, r.Path)
	}
	for _, w := range waivers {
		require.True(t, fields[w.Path], "waiver of %s, which the description does not require", w.Path)
	}
}

// TestRulesCiteTheReference: every rule and waiver says where it comes
// from, and every quote is in the file it names (spaces and line breaks
// aside); names are unique and keep their shape.
func TestRulesCiteTheReference(t *testing.T) {
	t.Parallel()
	docs := map[string]string{}
	norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	check := func(what string, cites []Cite) {
		require.NotEmpty(t, cites, "%s has no evidence", what)
		for _, c := range cites {
			if _, ok := docs[c.File]; !ok {
				docs[c.File] = norm(readReference(t, c.File))
			}
			require.Contains(t, docs[c.File], norm(c.Quote), "%s cites %s", what, c.File)
		}
	}
	names := map[string]bool{}
	name := regexp.MustCompile(`^[a-zA-Z]+(\.[a-zA-Z]+)*\.(required|enum|format|vatable|b2b|exempt)$`)
	for i, r := range rules {
		require.Equal(t, i, r.index)
		require.Regexp(t, name, r.Name)
		require.False(t, names[r.Name], "two rules named %s", r.Name)
		names[r.Name] = true
		require.Contains(t, []string{SourceDescription, SourceBoth, SourceWorldWins}, r.Source, r.Name)
		require.NotEmpty(t, r.Problem, r.Name)
		require.NotEmpty(t, r.Check, r.Name)
		check(r.Name, r.Evidence)
	}
	for _, w := range waivers {
		check("waiver of "+w.Path, w.Evidence)
	}
}

// TestEnumerationsAreTheInterfaces: each enumeration rule takes exactly
// the values of section 2.7 of the interface (taxType: both spellings).
func TestEnumerationsAreTheInterfaces(t *testing.T) {
	t.Parallel()
	doc := readReference(t, ifaceFile)
	values := func(name string) []string {
		m := regexp.MustCompile(`(?m)^\| ` + regexp.QuoteMeta(name) + ` \| (.*) \|$`).FindStringSubmatch(doc)
		require.NotNil(t, m, name)
		return strings.Split(m[1], ", ")
	}
	union := func(a, b []string) []string {
		out := slices.Clone(a)
		for _, v := range b {
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
		return out
	}
	want := map[string][]string{
		"type.enum":                       values("ReceiptType"),
		"receipts.taxType.enum":           union(values("TaxType (enumeration)"), values("taxType literals accepted in SubReceipt")),
		"receipts.items.barCodeType.enum": values("BarCodeType"),
		"payments.code.enum":              values("PaymentCode"),
		"payments.status.enum":            values("PaymentStatus"),
	}
	var enums []string
	for _, r := range rules {
		if strings.HasSuffix(r.Name, ".enum") {
			enums = append(enums, r.Name)
		}
	}
	require.ElementsMatch(t, enums, slices.Collect(mapKeys(want)))
	for name, vals := range want {
		r := ruleNamed(name)
		require.ElementsMatch(t, vals, strings.Split(strings.TrimPrefix(r.Check, "one of "), ", "), name)
		for _, v := range vals {
			require.Empty(t, r.check(&node{kind: kindString, text: v}, nil), "%s refuses %s", name, v)
		}
		require.NotEmpty(t, r.check(&node{kind: kindString, text: "OTHER"}, nil), name)
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestNewRules: a skipped rule no longer refuses, the others still do; an
// unknown name and a rule of the idempotency key are refused by name.
func TestNewRules(t *testing.T) {
	t.Parallel()
	body := mutate(t, func(m map[string]any) {
		m["districtCode"] = "Сүхбаатар"
		m["type"] = "B2G_RECEIPT"
	})
	_, err := ParseCreate(body)
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	require.Len(t, ve.Errors, 2)

	rs, err := NewRules([]string{"districtCode.format"})
	require.NoError(t, err)
	_, err = rs.ParseCreate(body)
	require.EqualError(t, err, "type: must be one of B2C_RECEIPT, B2B_RECEIPT, B2C_INVOICE, B2B_INVOICE")

	rs, err = NewRules([]string{"districtCode.format", "type.enum"})
	require.NoError(t, err)
	c, err := rs.ParseCreate(body)
	require.NoError(t, err)
	require.Equal(t, "B2G_RECEIPT", c.Type)

	_, err = NewRules([]string{"districtCode.fromat"})
	require.EqualError(t, err, `unknown rule "districtCode.fromat" (the rules are listed in docs/pos-integration.md)`)
	for _, name := range []string{"merchantTin.required", "posNo.required", "billIdSuffix.required"} {
		_, err = NewRules([]string{name})
		require.ErrorContains(t, err, `rule "`+name+`" cannot be skipped: receiptd derives the idempotency key from it`)
	}
	var none *Rules
	_, err = none.ParseCreate(body)
	require.Error(t, err, "nil Rules apply every rule")
}

// TestPublishedClientsReceipts: the receipts the published clients build
// (testdata/clients, sources in clientReceipts) are taken; the one live
// staging refused is refused for what it lacked.
func TestPublishedClientsReceipts(t *testing.T) {
	t.Parallel()
	for _, c := range clientReceipts {
		t.Run(c.file, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("testdata", "clients", c.file))
			require.NoError(t, err)
			_, err = ParseCreate(body)
			var fields []string
			var ve *ValidationError
			if err != nil {
				require.ErrorAs(t, err, &ve)
				for _, fe := range ve.Errors {
					fields = append(fields, fe.Field)
				}
			}
			require.Equal(t, c.refusedFor, fields, "%v", err)
		})
	}
}

// clientReceipts are the receipts in testdata/clients and what receiptd
// refuses in each: nothing, but for the one live staging refused.
var clientReceipts = []struct {
	file       string
	refusedFor []string
}{
	// Amraa1/ebarimt-pos-sdk ccaef2f, tests/integration/test_integration_receipt.py,
	// test_integration_receipt_delete_real_server: staging answered SUCCESS.
	// model_dump(by_alias=True, exclude_none=True), as the SDK sends it.
	{"python-sdk-b2c.json", nil},
	// The same file, test_integration_receipt_create_b2b_real_server (SUCCESS);
	// customer_tin is looked up at run time, 5317878 here.
	{"python-sdk-b2b.json", nil},
	// The same file, test_integration_receipt_create_real_server: staging
	// refused it (PosApiHttpError).
	{"python-sdk-refused.json", []string{"receipts[0].totalVAT", "totalVAT", "districtCode", "payments"}},
	// techpartners-asia/ebarimt-pos3-go 11b0479, tests/ebarimt_test.go
	// TestVats through build.go's buildRequest/buildReceipt and
	// structs/pos3.go (encoding/json, a VAT-paying merchant). The client
	// never writes billIdSuffix, which receiptd has always required (the
	// description does; the default idempotency key is built from it).
	{"go-client-testvats.json", []string{"billIdSuffix"}},
	// Amraa1/ebarimt-pos-sdk ccaef2f, spec/vendor/PosAPI.yaml: the vendor's
	// B2C_INVOICE example (in the description of type), as written.
	{"vendor-b2c-invoice.json", nil},
}
