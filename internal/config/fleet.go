package config

import (
	"fmt"
	"maps"
	"slices"
	"time"
	"unicode/utf8"
)

// EnvFleetHeaderPrefix + NAME sets the header NAME (underscores become
// hyphens, canonical case) on every push to fleet.remote_write_url, as
// EnvUpstreamHeaderPrefix does for the tax service: a head office's token
// need not be written into the file.
const EnvFleetHeaderPrefix = "RECEIPTD_FLEET_HEADERS_"

// Fleet is the push of receiptd's own metrics to a head office
// (remote-write 1.0), with store and forward.
type Fleet struct {
	// RemoteWriteURL is the head office's remote-write endpoint; empty
	// (the default) turns the push off.
	RemoteWriteURL string `toml:"remote_write_url" change:"named"`
	// Interval is the time between samples; at least 1s.
	Interval Duration `toml:"interval" change:"remote"`
	// Labels are added to every series pushed (shop = "017", till = "2");
	// "instance" among them replaces the host name. Never nil after
	// Default or Load.
	Labels map[string]string `toml:"labels" change:"remote"`
	// Headers are set on every push (say Authorization). Never nil after
	// Default or Load.
	Headers map[string]Secret `toml:"headers" change:"named"`
	// CAFile is a PEM file of CAs trusted besides the system's.
	CAFile string `toml:"ca_file" change:"named"`
	// Proxy is an http, https or socks5 URL; empty: the environment's
	// HTTPS_PROXY / HTTP_PROXY.
	Proxy string `toml:"proxy" change:"named"`
	// Buffer is the oldest unsent sample kept on disk while the head
	// office does not answer; BufferMB bounds the buffer's files (MiB).
	Buffer   Duration `toml:"buffer" change:"remote"`
	BufferMB int      `toml:"buffer_mb" change:"remote"`
}

// Enabled reports whether the push is on.
func (f Fleet) Enabled() bool { return f.RemoteWriteURL != "" }

func defaultFleet() Fleet {
	return Fleet{
		Interval: Dur(60 * time.Second),
		Labels:   map[string]string{},
		Headers:  map[string]Secret{},
		Buffer:   Dur(168 * time.Hour),
		BufferMB: 64,
	}
}

// check validates [fleet]. The keys are checked whether or not the push
// is on, so a section prepared for later is right when switched on.
func (f Fleet) check(ch *checker) {
	if f.RemoteWriteURL != "" {
		checkURL(ch, "fleet.remote_write_url", f.RemoteWriteURL, "http", "https")
	}
	if f.Buffer.Duration < f.Interval.Duration {
		ch.add("fleet.buffer", "must be at least one fleet.interval (%s), not %s", f.Interval, f.Buffer)
	}
	for _, name := range slices.Sorted(maps.Keys(f.Labels)) {
		if problem := labelProblem(name, f.Labels[name]); problem != "" {
			ch.add("fleet.labels."+name, "%s", problem)
		}
	}
	checkHeaders(ch, "fleet.headers", f.Headers)
	checkTransport(ch, "fleet", f.CAFile, f.Proxy)
}

// labelProblem applies Prometheus's label rules: a name matches
// [a-zA-Z_][a-zA-Z0-9_]*, and names starting with "__" are reserved; a
// value is UTF-8 and, here, not empty (an empty value is no label at all).
func labelProblem(name, value string) string {
	valid := name != ""
	for i, r := range name {
		letter := r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		if !letter && (i == 0 || r < '0' || r > '9') {
			valid = false
		}
	}
	switch {
	case !valid:
		return "is not a valid Prometheus label name (letters, digits and _, not starting with a digit)"
	case len(name) >= 2 && name[:2] == "__":
		return "label names starting with __ are reserved for Prometheus"
	case name == "le" || name == "quantile":
		return "is a label of histogram and summary series; choose another name"
	case len(name) > maxLabelName:
		return fmt.Sprintf("a label name must be at most %d bytes, not %d", maxLabelName, len(name))
	case value == "" || !utf8.ValidString(value):
		return "value must be a non-empty UTF-8 string"
	case len(value) > maxLabelValue:
		return fmt.Sprintf("a label value must be at most %d bytes, not %d", maxLabelValue, len(value))
	}
	return ""
}
