package cache

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/client"
)

func TestParseRoute(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, path, query string
		op                client.Op
		param             string
		segs              []string
		err               error
	}{
		{name: "info", path: "/rest/info", op: client.OpInfo},
		{name: "info ignores query", path: "/rest/info", query: "x=1", op: client.OpInfo},
		{name: "bank accounts", path: "/rest/bankAccounts", query: "tin=123", op: client.OpBankAccounts, param: "123"},
		{name: "merchant trimmed", path: "/api/info/check/getInfo", query: "tin=+123+", op: client.OpMerchantInfo, param: "123"},
		{name: "tin info", path: "/api/info/check/getTinInfo", query: "regNo=%D0%A3%D0%91900", op: client.OpTinInfo, param: "УБ900"},
		{name: "send data", path: "/rest/sendData", op: client.OpSendData},
		{name: "top level", path: classPrefix, op: client.OpClassification, param: ""},
		{name: "two levels", path: classPrefix + "/1/11", op: client.OpClassification, param: "1/11", segs: []string{"1", "11"}},
		{name: "escaped slash stays in its segment", path: classPrefix + "/a%2Fb", op: client.OpClassification, param: "a%2Fb", segs: []string{"a/b"}},
		{name: "trimmed segment", path: classPrefix + "/%201%09", op: client.OpClassification, param: "1", segs: []string{"1"}},
		{name: "missing tin", path: "/api/info/check/getInfo", err: ErrBadRequest},
		{name: "two tins", path: "/api/info/check/getInfo", query: "tin=1&tin=2", err: ErrBadRequest},
		{name: "long tin", path: "/api/info/check/getInfo", query: "tin=" + strings.Repeat("1", 65), err: ErrBadRequest},
		{name: "control in tin", path: "/api/info/check/getInfo", query: "tin=1%002", err: ErrBadRequest},
		{name: "bad escape", path: classPrefix + "/%zz", err: ErrBadRequest},
		{name: "seven", path: classPrefix + "/1/2/3/4/5/6/7", err: ErrBadRequest},
		{name: "empty", path: classPrefix + "/1//3", err: ErrBadRequest},
		{name: "unknown", path: "/rest/receipt", err: errNoRoute},
		{name: "prefix lookalike", path: classPrefix + "x/1", err: errNoRoute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := url.ParseQuery(tt.query)
			require.NoError(t, err)
			lk, err := parseRoute(tt.path, q)
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.op, lk.op)
			require.Equal(t, tt.param, lk.param)
			if tt.segs != nil {
				require.Equal(t, tt.segs, lk.segs)
			}
		})
	}
}

func TestRecordRoundTrip(t *testing.T) {
	t.Parallel()
	in := record{fetched: time.Unix(0, 1772355600123456789), status: 203, negative: true,
		contentType: "application/json; charset=utf-8", body: []byte(`{"msg":"","status":500,"data":null}`)}
	out, err := decodeRecord(in.encode(), true)
	require.NoError(t, err)
	require.True(t, in.fetched.Equal(out.fetched))
	out.fetched = in.fetched
	require.Equal(t, in, out)
	for _, bad := range [][]byte{nil, {2}, in.encode()[:recordHeader-1], append([]byte{1}, make([]byte, 13)...)} {
		_, err := decodeRecord(bad, true)
		require.ErrorIs(t, err, ErrBadRecord)
	}
}

// TestNoteTINKeepsItsOwnCopy: the receipt parser's strings are slices of
// one copy of the whole body, so a noted TIN that kept its string would
// keep that body in memory for the daemon's life (up to maxNotedTINs of
// them, each as large as accept.max_body allows).
func TestNoteTINKeepsItsOwnCopy(t *testing.T) {
	t.Parallel()
	c, err := New(context.Background(), openStore(t), nil, Config{}, nil, nil)
	require.NoError(t, err)
	body := `{"merchantTin":"5317878","pad":"` + strings.Repeat("x", 1<<20) + `"}`
	tin := body[len(`{"merchantTin":"`) : len(`{"merchantTin":"`)+7]
	require.Equal(t, "5317878", tin)
	c.NoteTIN(tin)
	require.Len(t, c.tins, 1)
	for k := range c.tins {
		require.Equal(t, tin, k)
		require.NotSame(t, unsafe.StringData(tin), unsafe.StringData(k), "the noted TIN shares the body's memory")
	}
}

func TestNoteTINKeepsOnlyUsableTINs(t *testing.T) {
	t.Parallel()
	c, err := New(context.Background(), openStore(t), nil, Config{}, nil, nil)
	require.NoError(t, err)
	for _, tc := range []struct {
		name, tin string
		noted     string // "" when the TIN is ignored
	}{
		{"plain", "5317878", "5317878"},
		{"trimmed", " 37900846788 ", "37900846788"},
		{"empty", "", ""},
		{"blank", "   ", ""},
		{"too long", strings.Repeat("1", maxParam+1), ""},
		{"control character", "12\x0034", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clear(c.tins)
			c.NoteTIN(tc.tin)
			if tc.noted == "" {
				require.Empty(t, c.tins)
				return
			}
			require.Equal(t, map[string]struct{}{tc.noted: {}}, c.tins)
		})
	}
}
