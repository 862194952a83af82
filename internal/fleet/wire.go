package fleet

import (
	"math"
	"slices"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/encoding/protowire"
)

// The remote-write 1.0 message, as Prometheus's prompb/remote.proto and
// types.proto define it (only the fields receiptd sends):
//
//	message WriteRequest { repeated TimeSeries timeseries = 1; }
//	message TimeSeries   { repeated Label labels = 1; repeated Sample samples = 2; }
//	message Label        { string name = 1; string value = 2; }
//	message Sample       { double value = 1; int64 timestamp = 2; }
//
// Repeated fields concatenate, so two encoded WriteRequests laid end to
// end are one WriteRequest holding the series of both: the buffer keeps
// one per interval and a request joins several.
const (
	fieldTimeseries  = 1
	fieldLabels      = 1
	fieldSamples     = 2
	fieldLabelName   = 1
	fieldLabelValue  = 2
	fieldSampleValue = 1
	fieldSampleTime  = 2
)

// Prefix is the name prefix of the series pushed: receiptd's own.
const Prefix = "receiptd_"

type label struct{ name, value string }

// encoder turns gathered metric families into one WriteRequest.
type encoder struct {
	external []label // fleet labels and instance, sorted
	buf      []byte
	series   []byte // scratch for one TimeSeries
	labels   []label
	samples  uint32
}

// encode appends the WriteRequest of every receiptd_ series in families,
// all at sample time ts (Unix ms), and returns it with its sample count.
func (e *encoder) encode(families []*dto.MetricFamily, ts int64) ([]byte, uint32) {
	e.buf, e.samples = e.buf[:0], 0
	for _, mf := range families {
		name := mf.GetName()
		if !strings.HasPrefix(name, Prefix) {
			continue
		}
		for _, m := range mf.GetMetric() {
			e.metric(name, mf.GetType(), m, ts)
		}
	}
	return e.buf, e.samples
}

func (e *encoder) metric(name string, t dto.MetricType, m *dto.Metric, ts int64) {
	switch t {
	case dto.MetricType_COUNTER:
		e.series1(name, m, "", "", m.GetCounter().GetValue(), ts)
	case dto.MetricType_GAUGE:
		e.series1(name, m, "", "", m.GetGauge().GetValue(), ts)
	case dto.MetricType_UNTYPED:
		e.series1(name, m, "", "", m.GetUntyped().GetValue(), ts)
	case dto.MetricType_HISTOGRAM:
		h := m.GetHistogram()
		inf := false
		for _, b := range h.GetBucket() {
			inf = inf || math.IsInf(b.GetUpperBound(), 1)
			e.series1(name+"_bucket", m, "le", formatFloat(b.GetUpperBound()), float64(b.GetCumulativeCount()), ts)
		}
		if !inf {
			e.series1(name+"_bucket", m, "le", "+Inf", float64(h.GetSampleCount()), ts)
		}
		e.series1(name+"_sum", m, "", "", h.GetSampleSum(), ts)
		e.series1(name+"_count", m, "", "", float64(h.GetSampleCount()), ts)
	case dto.MetricType_SUMMARY:
		s := m.GetSummary()
		for _, q := range s.GetQuantile() {
			e.series1(name, m, "quantile", formatFloat(q.GetQuantile()), q.GetValue(), ts)
		}
		e.series1(name+"_sum", m, "", "", s.GetSampleSum(), ts)
		e.series1(name+"_count", m, "", "", float64(s.GetSampleCount()), ts)
	}
}

// series1 appends one TimeSeries of one sample: the metric's labels, the
// extra one (le, quantile) when named, and the external labels the
// metric does not set itself (a series' own label wins, as with
// Prometheus's external_labels).
func (e *encoder) series1(name string, m *dto.Metric, extraName, extraValue string, v float64, ts int64) {
	e.labels = append(e.labels[:0], label{"__name__", name})
	for _, lp := range m.GetLabel() {
		e.labels = append(e.labels, label{lp.GetName(), lp.GetValue()})
	}
	if extraName != "" {
		e.labels = append(e.labels, label{extraName, extraValue})
	}
	own := len(e.labels)
	for _, x := range e.external {
		if !slices.ContainsFunc(e.labels[:own], func(l label) bool { return l.name == x.name }) {
			e.labels = append(e.labels, x)
		}
	}
	slices.SortFunc(e.labels, func(a, b label) int { return strings.Compare(a.name, b.name) })

	s := e.series[:0]
	for _, l := range e.labels {
		var lb []byte
		lb = protowire.AppendTag(lb, fieldLabelName, protowire.BytesType)
		lb = protowire.AppendString(lb, l.name)
		lb = protowire.AppendTag(lb, fieldLabelValue, protowire.BytesType)
		lb = protowire.AppendString(lb, l.value)
		s = protowire.AppendTag(s, fieldLabels, protowire.BytesType)
		s = protowire.AppendBytes(s, lb)
	}
	var sb []byte
	sb = protowire.AppendTag(sb, fieldSampleValue, protowire.Fixed64Type)
	sb = protowire.AppendFixed64(sb, math.Float64bits(v))
	sb = protowire.AppendTag(sb, fieldSampleTime, protowire.VarintType)
	sb = protowire.AppendVarint(sb, uint64(ts))
	s = protowire.AppendTag(s, fieldSamples, protowire.BytesType)
	s = protowire.AppendBytes(s, sb)
	e.series = s

	e.buf = protowire.AppendTag(e.buf, fieldTimeseries, protowire.BytesType)
	e.buf = protowire.AppendBytes(e.buf, s)
	e.samples++
}

// formatFloat writes a bucket bound or quantile as the Prometheus text
// format does, so a pushed series has the labels a scraped one has.
func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	case math.IsNaN(f):
		return "NaN"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// externalLabels sorts the fleet labels and instance into the encoder's
// form.
func externalLabels(labels map[string]string, instance string) []label {
	out := make([]label, 0, len(labels)+1)
	for k, v := range labels {
		if k != "instance" {
			out = append(out, label{k, v})
		}
	}
	if v, ok := labels["instance"]; ok {
		instance = v
	}
	if instance != "" {
		out = append(out, label{"instance", instance})
	}
	slices.SortFunc(out, func(a, b label) int { return strings.Compare(a.name, b.name) })
	return out
}
