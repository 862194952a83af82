package metrics

import (
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// watchDaemon watches m as one daemon's components would, each counter at n.
func watchDaemon(t *testing.T, m *Metrics, n uint64) {
	t.Helper()
	m.WatchQueue(nil)
	m.WatchLog(func() (uint64, uint64) { return n, 10 * n })
	m.WatchBackup(func() (Backup, bool) { return Backup{Snapshots: n, Failures: 2 * n}, true })
	require.NoError(t, m.WatchFleet(func() (float64, uint64, uint64) { return 0, 0, n }))
	m.WatchPosAPI(func() PosAPIStats { return PosAPIStats{PosAPI: "pos:1", SendDataOK: n, SendDataFailed: 3 * n} })
	require.NoError(t, m.WatchControl(func() (bool, float64, uint64) { return true, 0, 0 }))
	require.NoError(t, m.SetBuildInfo("v1"))
}

// TestUnwatchCarriesComponentCounters: one Metrics serves the daemons a
// Supervisor runs one after the other; the counters a component reports
// since it started go on across them instead of restarting from zero.
func TestUnwatchCarriesComponentCounters(t *testing.T) {
	m := New()
	m.SendAttempt("receipt", "success", 0)
	watchDaemon(t, m, 5)
	m.Unwatch()
	fams := scrape(t, m.Handler())
	require.Nil(t, fams["receiptd_log_records_total"], "the stopped daemon is no longer read")
	require.Nil(t, fams["receiptd_backup_snapshots_total"])
	require.Nil(t, fams["receiptd_control_connected"])

	watchDaemon(t, m, 1) // the next daemon's components start from zero
	fams = scrape(t, m.Handler())
	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"receiptd_log_flushes_total", nil, 6},
		{"receiptd_log_records_total", nil, 60},
		{"receiptd_backup_snapshots_total", nil, 6},
		{"receiptd_backup_failures_total", nil, 12},
		{"receiptd_fleet_dropped_samples_total", nil, 6},
		{"receiptd_send_data_total", []string{"posapi", "pos:1", "result", "ok"}, 6},
		{"receiptd_send_data_total", []string{"posapi", "pos:1", "result", "failed"}, 18},
		{"receiptd_send_attempts_total", []string{"kind", "receipt", "outcome", "success"}, 1},
		{"receiptd_build_info", []string{"version", "v1"}, 1},
	} {
		require.Equal(t, tc.want, value(t, fams, tc.name, tc.labels...), tc.name)
	}
	require.Error(t, m.SetBuildInfo("v2"), "one version per process")
	var nilM *Metrics
	require.NotPanics(t, nilM.Unwatch)
	require.NotPanics(t, New().Unwatch, "nothing watched yet")
}

// calls counts the calls of each watched function, by Watch method; a
// scrape calls them from goroutines of its own.
type calls struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *calls) add(name string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[name] += n
}

// take returns the counts and starts again from zero.
func (c *calls) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = map[string]int{}
	for name := range n {
		c.n[name] = 0
	}
	return n
}

// watchAll calls every Watch method of m, found by reflection, with a
// function that counts its calls in calls (by method name) and returns
// ones: 1 for every number, true, "x", a map of one entry, a struct of
// ones. A Watch method added later is watched here without anyone
// listing it.
func watchAll(t *testing.T, m *Metrics, calls *calls) {
	t.Helper()
	mv := reflect.ValueOf(m)
	for i := range mv.NumMethod() {
		name := mv.Type().Method(i).Name
		if !strings.HasPrefix(name, "Watch") {
			continue
		}
		method := mv.Method(i)
		require.Equal(t, 1, method.Type().NumIn(), name)
		ft := method.Type().In(0)
		require.Equal(t, reflect.Func, ft.Kind(), "%s takes the function a scrape calls", name)
		f := reflect.MakeFunc(ft, func([]reflect.Value) []reflect.Value {
			calls.add(name, 1)
			out := make([]reflect.Value, ft.NumOut())
			for j := range out {
				out[j] = ones(ft.Out(j))
			}
			return out
		})
		for _, res := range method.Call([]reflect.Value{f}) {
			require.True(t, res.IsNil(), "%s: %v", name, res)
		}
		calls.add(name, 0) // known, even before a scrape calls it
	}
	require.GreaterOrEqual(t, len(calls.n), 9, "WatchQueue, WatchStore, WatchLog, WatchAnswers, WatchPosAPI, WatchBackup, WatchFleet, WatchControl, WatchUpdate")
}

// ones is a value of type t with every number 1, every bool true and
// every string "x"; an error (an interface) is nil.
func ones(t reflect.Type) reflect.Value {
	v := reflect.New(t).Elem()
	switch t.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1)
	case reflect.String:
		v.SetString("x")
	case reflect.Pointer:
		v.Set(reflect.New(t.Elem()))
		v.Elem().Set(ones(t.Elem()))
	case reflect.Map:
		v.Set(reflect.MakeMap(t))
		v.SetMapIndex(ones(t.Key()), ones(t.Elem()))
	case reflect.Struct:
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				v.Field(i).Set(ones(t.Field(i).Type))
			}
		}
	}
	return v
}

// TestUnwatchStopsEveryWatch: after Unwatch, a scrape reads no function
// any Watch method set. A Watch method whose collector Unwatch forgets
// fails here by name.
func TestUnwatchStopsEveryWatch(t *testing.T) {
	m := New()
	var c calls
	watchAll(t, m, &c)
	_, err := m.Gather()
	require.NoError(t, err)
	for name, n := range c.take() {
		require.Positive(t, n, "a scrape reads what %s set", name)
	}
	m.Unwatch()
	c.take()
	_, err = m.Gather()
	require.NoError(t, err)
	for name, n := range c.take() {
		require.Zero(t, n, "Unwatch leaves what %s set watched: a stopped daemon is still read", name)
	}
}

// notCarried are the counters read from a watched function that Unwatch
// does not carry over, each with why.
var notCarried = map[string]string{
	// The control client is the Supervisor's: it outlives the daemons, and
	// its count goes on by itself.
	"receiptd_control_remote_config_failures_total": "counted across daemons by its source",
	// update.json keeps both for good; every daemon reads the file's total.
	"receiptd_update_rollbacks_total": "read from update.json, the total for good",
	"receiptd_update_refusals_total":  "read from update.json, the total for good",
}

// TestUnwatchCarriesEveryWatchedCounter: every counter a watched
// function reports goes on across a swap of daemons (the next one's
// components start again from their own zero) unless notCarried says
// why not. A counter added to a Watch without its carry fails here.
func TestUnwatchCarriesEveryWatchedCounter(t *testing.T) {
	m := New()
	before := counterValues(t, m)
	watchAll(t, m, &calls{})
	first := counterValues(t, m)
	m.Unwatch()
	watchAll(t, m, &calls{}) // the next daemon's, from its own zero
	second := counterValues(t, m)
	seen := 0
	for series, v := range first {
		if _, registry := before[series]; registry {
			continue // the registry's own counters
		}
		seen++
		name, _, _ := strings.Cut(series, "{")
		if notCarried[name] != "" {
			require.Equal(t, v, second[series], series)
			continue
		}
		require.Equal(t, 2*v, second[series], "%s starts again from zero after a swap: carry it over in Unwatch, or list it in notCarried", series)
	}
	require.GreaterOrEqual(t, seen, 7, "log flushes and records, backup snapshots and failures, fleet dropped, send_data ok and failed")
}

// counterValues is every counter series m has now, by name and labels.
func counterValues(t *testing.T, m *Metrics) map[string]float64 {
	t.Helper()
	fams, err := m.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, fam := range fams {
		for _, s := range fam.GetMetric() {
			if s.Counter == nil {
				continue
			}
			key := fam.GetName() + "{"
			for _, l := range s.GetLabel() {
				key += l.GetName() + "=" + l.GetValue() + ","
			}
			out[key+"}"] = s.Counter.GetValue()
		}
	}
	return out
}
