// Package fleettest is a remote-write 1.0 receiver for tests: an HTTP
// server on 127.0.0.1:0 that decodes every WriteRequest strictly (unknown
// fields and unsorted labels are errors) and keeps the samples.
package fleettest

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
	"google.golang.org/protobuf/encoding/protowire"
)

// Fields of the remote-write 1.0 messages (prompb's types.proto).
const (
	fieldTimeseries  = 1
	fieldLabels      = 1
	fieldSamples     = 2
	fieldLabelName   = 1
	fieldLabelValue  = 2
	fieldSampleValue = 1
	fieldSampleTime  = 2
)

// Sample is one decoded sample of a pushed series.
type Sample struct {
	Labels map[string]string
	Value  float64
	TS     int64 // Unix milliseconds
}

// Series is the sample's label set as one sorted string
// ("__name__=x,shop=017,").
func (s Sample) Series() string {
	keys := make([]string, 0, len(s.Labels))
	for k := range s.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=" + s.Labels[k] + ",")
	}
	return b.String()
}

// Receiver is a remote-write endpoint on 127.0.0.1:0; URL is its
// address. answer, when set, picks each request's status code (n counts
// the requests from 0); a request answered 2xx is decoded and kept, a
// malformed one fails the test.
type Receiver struct {
	URL     string
	t       testing.TB
	mu      sync.Mutex
	samples []Sample
	headers []http.Header
	answer  func(n int) int
	n       int
}

// New starts a Receiver, closed at the test's end.
func New(t testing.TB, answer func(n int) int) *Receiver {
	r := &Receiver{t: t, answer: answer}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("receiver: %v", err)
	}
	srv := &http.Server{Handler: r}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	r.URL = "http://" + ln.Addr().String() + "/api/v1/write"
	return r
}

// ServeHTTP decodes one push.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
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
		got, err := DecodePush(body)
		if err != nil {
			r.t.Error(err)
			code = http.StatusBadRequest
		}
		r.samples = append(r.samples, got...)
	}
	w.WriteHeader(code)
}

// DecodePush decodes a push's body: a snappy-compressed WriteRequest.
func DecodePush(body []byte) ([]Sample, error) {
	raw, err := snappy.Decode(nil, body)
	if err != nil {
		return nil, fmt.Errorf("body is not snappy: %w", err)
	}
	got, err := DecodeWriteRequest(raw)
	if err != nil {
		return nil, fmt.Errorf("WriteRequest: %w", err)
	}
	return got, nil
}

// Samples returns every sample received so far, in arrival order.
func (r *Receiver) Samples() []Sample {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Sample(nil), r.samples...)
}

// Requests returns how many requests arrived.
func (r *Receiver) Requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// Headers returns the headers of request i.
func (r *Receiver) Headers(i int) http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.headers[i]
}

// DecodeWriteRequest decodes a remote-write 1.0 WriteRequest field by
// field, refusing unknown fields and unsorted labels (stricter than
// Prometheus).
func DecodeWriteRequest(b []byte) ([]Sample, error) {
	var out []Sample
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if num != fieldTimeseries || typ != protowire.BytesType {
			return errf("WriteRequest: unexpected field %d", num)
		}
		labels := map[string]string{}
		var names []string
		var samples []Sample
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
				var s Sample
				err := fields(v, func(num protowire.Number, typ protowire.Type, _ []byte, n uint64) error {
					switch {
					case num == fieldSampleValue && typ == protowire.Fixed64Type:
						s.Value = math.Float64frombits(n)
					case num == fieldSampleTime && typ == protowire.VarintType:
						s.TS = int64(n)
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
			s.Labels = labels
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
