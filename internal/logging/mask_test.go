package logging

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

const (
	lottery = "SN 47461258"
	qrData  = "7730417529283518493026"
	tin     = "12345678901"
	consNo  = "88990011"
)

// secrets are the substrings that must never reach a log line.
var secrets = []string{"47461258", qrData, "12345678", "88990"}

func TestMaskTIN(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"1", "*****"},
		{"123456", "*****"},
		{"1234567", "*****567"},
		{tin, "*****901"},
		{"ÖÄÜ1234ЖЯЮ", "*****ЖЯЮ"},
		{"*****901", "*****901"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			require.Equal(t, tc.want, MaskTIN(tc.in))
			require.Equal(t, tc.want, MaskTIN(MaskTIN(tc.in)), "idempotent")
		})
	}
	require.Equal(t, zap.String("customerTin", "*****901"), CustomerTin(tin))
	require.Equal(t, zap.String("consumerNo", "*****011"), ConsumerNo(consNo))
}

func TestScrubText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, in, want string }{
		{"plain", "receipt Q000000000001 sent", "receipt Q000000000001 sent"},
		{"word only", "lottery number missing", "lottery number missing"},
		{"json", `{"id":"1","lottery":"SN 47461258","qrData":"77","x":1}`,
			`{"id":"1","lottery":"[redacted]","qrData":"[redacted]","x":1}`},
		{"json spaced", `{"lottery" : "SN 1"}`, `{"lottery" : "[redacted]"}`},
		{"escaped json", `{\"lottery\":\"SN 47461258\",\"n\":1}`, `{\"lottery\":\"[redacted]\",\"n\":1}`},
		{"key=value", "lottery=SN 47461258, posNo=1", "lottery=[redacted], posNo=1"},
		{"unquoted runs to a separator", "lottery=SN 1 printed; ok", "lottery=[redacted]; ok"},
		{"key: value", "QR_DATA: 7730417529283518493026", "QR_DATA: [redacted]"},
		{"query", "?customerTin=12345678901&x=1", "?customerTin=*****901&x=1"},
		{"tin json", `{"customerTin":"12345678901"}`, `{"customerTin":"*****901"}`},
		{"tin number", `{"consumerNo":88990011}`, `{"consumerNo":*****011}`},
		{"null", `{"qrData":null}`, `{"qrData":[redacted]}`},
		{"quote in value", `{"lottery":"SN \"4746\" 1258"}`, `{"lottery":"[redacted]"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, ScrubText(tc.in))
		})
	}
}

type leakyStringer struct{}

func (leakyStringer) String() string { return `{"lottery":"SN 47461258"}` }

type upstreamAnswer struct {
	ID       string `json:"id"`
	Lottery  string `json:"lottery"`
	QRData   string `json:"qrData"`
	Receipts []struct {
		CustomerTin string `json:"customerTin"`
	} `json:"receipts"`
}

// carelessFields are the ways a developer might log a secret by mistake.
func carelessFields() []zap.Field {
	body := `{"id":"000000042","lottery":"SN 47461258","qrData":"` + qrData + `","customerTin":"` + tin + `"}`
	answer := upstreamAnswer{ID: "42", Lottery: lottery, QRData: qrData}
	answer.Receipts = append(answer.Receipts, struct {
		CustomerTin string `json:"customerTin"`
	}{tin})
	return []zap.Field{
		zap.String("lottery", lottery),
		zap.String("QRData", qrData),
		zap.String("customer_tin", tin),
		zap.Int64("consumerNo", 88990011),
		zap.Stringer("consumerno", leakyStringer{}),
		zap.Any("Customer-TIN", []int{1, 2, 3, 4, 5, 6, 7, 8}),
		zap.ByteString("body", []byte(body)),
		zap.String("raw", body),
		zap.Error(fmt.Errorf("upstream rejected: %s", body)),
		zap.Any("answer", answer),
		zap.Any("generic", map[string]any{"nested": map[string]any{"qrData": qrData, "consumerNo": consNo}}),
		zap.Object("obj", zapcore.ObjectMarshalerFunc(func(e zapcore.ObjectEncoder) error {
			e.AddString("lottery", lottery)
			e.AddString("keep", "visible")
			return nil
		})),
		zap.Inline(zapcore.ObjectMarshalerFunc(func(e zapcore.ObjectEncoder) error {
			e.AddString("customerTin", tin)
			return nil
		})),
		zap.Array("arr", zapcore.ArrayMarshalerFunc(func(e zapcore.ArrayEncoder) error {
			e.AppendString(body)
			return e.AppendObject(zapcore.ObjectMarshalerFunc(func(o zapcore.ObjectEncoder) error {
				o.AddString("qrData", qrData)
				return nil
			}))
		})),
		zap.Stringer("stringer", leakyStringer{}),
		zap.Strings("many", []string{"lottery: " + lottery}),
		zap.String("queueId", "Q000000000042"),
		zap.Int("attempt", 3),
	}
}

func TestCarelessLogLinesLeakNothing(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "receiptd.log")
	log, done, err := New(Options{Level: "debug", File: path})
	require.NoError(t, err)
	log.With(zap.String("lottery", lottery), CustomerTin(tin)).
		Info("upstream said customerTin="+tin+", lottery="+lottery, carelessFields()...)
	require.NoError(t, done())

	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, s := range secrets {
		require.NotContains(t, string(raw), s)
	}

	lines := readLines(t, path)
	require.Len(t, lines, 1)
	l := lines[0]
	require.Equal(t, "upstream said customerTin=*****901, lottery=[redacted]", l["msg"])
	require.Equal(t, Redacted, l["lottery"])
	require.Equal(t, Redacted, l["QRData"])
	require.Equal(t, "*****901", l["customerTin"])
	require.Equal(t, "*****901", l["customer_tin"])
	require.Equal(t, "*****011", l["consumerNo"])
	require.Equal(t, MaskTIN(leakyStringer{}.String()), l["consumerno"], "a Stringer is masked by its text")
	require.Equal(t, "*****", l["Customer-TIN"], "a non-scalar identifier is masked entirely")
	require.Contains(t, l["body"], `"lottery":"[redacted]"`)
	require.Contains(t, l["error"], `upstream rejected: {"id":"000000042"`)
	require.Equal(t, map[string]any{"id": "42", "lottery": Redacted, "qrData": Redacted,
		"receipts": []any{map[string]any{"customerTin": "*****901"}}}, l["answer"])
	require.Equal(t, map[string]any{"keep": "visible", "lottery": Redacted}, l["obj"])
	require.Equal(t, `{"lottery":"[redacted]"}`, l["stringer"])
	require.Equal(t, []any{"lottery: [redacted]"}, l["many"])
	require.Equal(t, "Q000000000042", l["queueId"], "other fields untouched")
	require.EqualValues(t, 3, l["attempt"])
}

func TestWrapCoreOnOtherCores(t *testing.T) {
	t.Parallel()
	obsCore, logs := observer.New(zapcore.InfoLevel)
	core := WrapCore(WrapCore(obsCore))
	_, double := core.(scrubCore).Core.(scrubCore)
	require.False(t, double, "wrapping twice does not nest")

	log := zap.New(core)
	log.Debug("below the level", zap.String("lottery", lottery))
	log.Info("sent", zap.String("qrData", qrData), zap.String("queueId", "Q1"))
	all := logs.All()
	require.Len(t, all, 1)
	ctx := all[0].ContextMap()
	require.Equal(t, Redacted, ctx["qrData"])
	require.Equal(t, "Q1", ctx["queueId"])
}

func TestScrubFieldsCopiesOnlyOnChange(t *testing.T) {
	t.Parallel()
	clean := []zap.Field{zap.String("queueId", "Q1"), zap.Int("n", 1), zap.Error(errors.New("timeout"))}
	got := scrubFields(clean)
	require.Equal(t, &clean[0], &got[0], "no copy when nothing changes")

	dirty := []zap.Field{zap.String("queueId", "Q1"), zap.String("lottery", lottery)}
	got = scrubFields(dirty)
	require.Equal(t, lottery, dirty[1].String, "the caller's slice is not modified")
	require.Equal(t, Redacted, got[1].String)
}

func FuzzScrubText(f *testing.F) {
	for _, seed := range [][3]string{
		{`{"id":"1",`, "SN 47461258", `}`},
		{"upstream: ", "7730417529283518493026", ""},
		{`{\"a\":1,`, "SN 1234", `,\"b\":2}`},
		{"", "ÄÖÜ∑≈", "\n"},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, prefix, secret, suffix string) {
		// Whatever the input, ScrubText is idempotent and never panics.
		out := ScrubText(prefix + secret + suffix)
		require.Equal(t, out, ScrubText(out))

		if len(secret) < 4 || strings.ContainsAny(secret, `"\`) ||
			mayHoldKey(prefix+suffix) || mayHoldKey(secret) ||
			strings.Contains(prefix+suffix, secret) || strings.Contains(Redacted, secret) {
			return
		}
		for _, form := range []string{
			`"lottery":"` + secret + `"`,
			`"qrData" : "` + secret + `"`,
			`\"lottery\":\"` + secret + `\"`,
		} {
			got := ScrubText(prefix + form + suffix)
			require.NotContains(t, got, secret, "input %q", prefix+form+suffix)
		}
	})
}

func FuzzMaskTIN(f *testing.F) {
	for _, seed := range []string{"", "1", "12345678901", "ЖЯЮ1234567", "\xff\xfe123456789"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := MaskTIN(s)
		require.Equal(t, got, MaskTIN(got))
		if s == "" {
			require.Empty(t, got)
			return
		}
		require.True(t, strings.HasPrefix(got, maskPrefix))
		require.LessOrEqual(t, len([]rune(got)), len([]rune(maskPrefix))+maskKeep)
	})
}

// BenchmarkLogLine measures what the scrubbing core adds to a typical line
// (nothing to scrub) and to a line that needs it, against a plain core.
func BenchmarkLogLine(b *testing.B) {
	enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	plain := zapcore.NewCore(enc, zapcore.AddSync(io.Discard), zapcore.InfoLevel)
	clean := []zap.Field{zap.String("queueId", "Q000000000042"), zap.Int("attempt", 2),
		zap.Duration("took", 1500), zap.Error(errors.New("connection refused"))}
	dirty := append(clean, zap.String("body", `{"id":"1","lottery":"SN 47461258","qrData":"77"}`),
		zap.String("customerTin", tin))
	for _, bc := range []struct {
		name   string
		core   zapcore.Core
		fields []zap.Field
	}{
		{"plain-core/clean", plain, clean},
		{"scrub-core/clean", WrapCore(plain), clean},
		{"scrub-core/dirty", WrapCore(plain), dirty},
	} {
		b.Run(bc.name, func(b *testing.B) {
			log := zap.New(bc.core)
			b.ReportAllocs()
			for b.Loop() {
				log.Info("receipt sent upstream", bc.fields...)
			}
		})
	}
}

type nilStringer struct{ s string }

func (n *nilStringer) String() string { return n.s }

func TestNilPointerStringerDoesNotPanic(t *testing.T) {
	t.Parallel()
	obsCore, logs := observer.New(zapcore.InfoLevel)
	log := zap.New(WrapCore(obsCore))
	require.NotPanics(t, func() {
		log.Info("x", zap.Stringer("s", (*nilStringer)(nil)))
	})
	require.Equal(t, 1, logs.Len())
}
