package fleet

import (
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
)

// sample is one decoded sample of a pushed series.
type sample struct {
	labels map[string]string
	value  float64
	ts     int64
}

func (s sample) series() string {
	keys := make([]string, 0, len(s.labels))
	for k := range s.labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=" + s.labels[k] + ",")
	}
	return b.String()
}

// receiver is a remote-write endpoint on 127.0.0.1:0 that decodes every
// WriteRequest; answer picks each request's status code.
type receiver struct {
	t       *testing.T
	url     string
	mu      sync.Mutex
	samples []sample
	headers []http.Header
	answer  func(n int) int // n: requests so far, from 0
	n       int
}

func newReceiver(t *testing.T, answer func(n int) int) *receiver {
	r := &receiver{t: t, answer: answer}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: r}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	r.url = "http://" + ln.Addr().String() + "/api/v1/write"
	return r
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	code := http.StatusNoContent
	if r.answer != nil {
		code = r.answer(r.n)
	}
	r.n++
	r.headers = append(r.headers, req.Header.Clone())
	if code/100 == 2 {
		raw, err := snappy.Decode(nil, body)
		if err != nil {
			r.t.Errorf("body is not snappy: %v", err)
			code = http.StatusBadRequest
		} else {
			got, err := decodeWriteRequest(raw)
			if err != nil {
				r.t.Errorf("WriteRequest: %v", err)
				code = http.StatusBadRequest
			}
			r.samples = append(r.samples, got...)
		}
	}
	w.WriteHeader(code)
}

func (r *receiver) got() []sample {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]sample(nil), r.samples...)
}

func (r *receiver) requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// decodeWriteRequest decodes a remote-write 1.0 WriteRequest field by
// field, refusing unknown fields and unsorted labels (the receiver's
// rules, stricter than Prometheus's).
func decodeWriteRequest(b []byte) ([]sample, error) {
	var out []sample
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if num != fieldTimeseries || typ != protowire.BytesType {
			return errf("WriteRequest: unexpected field %d", num)
		}
		labels := map[string]string{}
		var names []string
		var samples []sample
		err := fields(v, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
			switch num {
			case fieldLabels:
				var name, value string
				err := fields(v, func(num protowire.Number, _ protowire.Type, v []byte, _ uint64) error {
					switch num {
					case fieldLabelName:
						name = string(v)
					case fieldLabelValue:
						value = string(v)
					default:
						return errf("Label: unexpected field %d", num)
					}
					return nil
				})
				names = append(names, name)
				labels[name] = value
				return err
			case fieldSamples:
				var s sample
				err := fields(v, func(num protowire.Number, typ protowire.Type, _ []byte, n uint64) error {
					switch {
					case num == fieldSampleValue && typ == protowire.Fixed64Type:
						s.value = math.Float64frombits(n)
					case num == fieldSampleTime && typ == protowire.VarintType:
						s.ts = int64(n)
					default:
						return errf("Sample: unexpected field %d", num)
					}
					return nil
				})
				samples = append(samples, s)
				return err
			}
			return errf("TimeSeries: unexpected field %d", num)
		})
		if err != nil {
			return err
		}
		if !sort.StringsAreSorted(names) {
			return errf("labels not sorted: %v", names)
		}
		for _, s := range samples {
			s.labels = labels
			out = append(out, s)
		}
		return nil
	})
	return out, err
}

var errf = fmt.Errorf

// fields calls f for every field of a message: v is the bytes of a
// length-delimited field, n the number of a varint or fixed64 one.
func fields(b []byte, f func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error) error {
	for len(b) > 0 {
		num, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return protowire.ParseError(l)
		}
		b = b[l:]
		var v []byte
		var n uint64
		switch typ {
		case protowire.BytesType:
			v, l = protowire.ConsumeBytes(b)
		case protowire.VarintType:
			n, l = protowire.ConsumeVarint(b)
		case protowire.Fixed64Type:
			n, l = protowire.ConsumeFixed64(b)
		default:
			return errf("unexpected wire type %d", typ)
		}
		if l < 0 {
			return protowire.ParseError(l)
		}
		b = b[l:]
		if err := f(num, typ, v, n); err != nil {
			return err
		}
	}
	return nil
}
