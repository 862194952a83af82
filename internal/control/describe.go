package control

import (
	"bytes"
	"maps"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/receiptd/receiptd/internal/config"
)

// ConfigKey is the config-map key of receiptd's configuration, both the
// effective one reported and the remote fragment received.
const ConfigKey = "receiptd.toml"

// ContentType is the content type of ConfigKey's body.
const ContentType = "application/toml"

// Redacted stands in for every secret in the effective configuration.
const Redacted = "(set)"

// Health is the daemon's health as the head office sees it.
type Health struct {
	// Healthy: ready, the upstream up and no unsent-receipt alert.
	Healthy bool
	// Status is the status page's first line.
	Status string
	// Components are upstream, queue, posapi, backup and fleet.
	Components map[string]ComponentHealth
}

// ComponentHealth is one part of Health.
type ComponentHealth struct {
	Healthy bool
	Status  string
}

func (h Health) proto(started time.Time) *protobufs.ComponentHealth {
	out := &protobufs.ComponentHealth{
		Healthy:           h.Healthy,
		StartTimeUnixNano: uint64(started.UnixNano()),
		Status:            h.Status,
	}
	if len(h.Components) > 0 {
		out.ComponentHealthMap = make(map[string]*protobufs.ComponentHealth, len(h.Components))
		for name, ch := range h.Components {
			out.ComponentHealthMap[name] = &protobufs.ComponentHealth{
				Healthy:           ch.Healthy,
				StartTimeUnixNano: uint64(started.UnixNano()),
				Status:            ch.Status,
			}
		}
	}
	return out
}

// Identity is what the agent description says about the till.
type Identity struct {
	InstanceID string
	Version    string
	HostName   string
	// Labels are [fleet.labels]: shop, till, and whatever the chain uses.
	Labels map[string]string
	// PosNo is PosAPI's posNo, "" while unknown.
	PosNo string
}

// description is the OpAMP agent description: identifying attributes
// name the till, non-identifying ones let a server group tills (by shop).
func (id Identity) description() *protobufs.AgentDescription {
	d := &protobufs.AgentDescription{
		IdentifyingAttributes: []*protobufs.KeyValue{
			keyValue("service.name", "receiptd"),
			keyValue("service.version", id.Version),
			keyValue("service.instance.id", id.InstanceID),
			keyValue("host.name", id.HostName),
		},
		NonIdentifyingAttributes: []*protobufs.KeyValue{keyValue("os.type", runtime.GOOS)},
	}
	for _, name := range slices.Sorted(maps.Keys(id.Labels)) {
		d.NonIdentifyingAttributes = append(d.NonIdentifyingAttributes, keyValue(name, id.Labels[name]))
	}
	if id.PosNo != "" {
		d.NonIdentifyingAttributes = append(d.NonIdentifyingAttributes, keyValue("posNo", id.PosNo))
	}
	return d
}

func keyValue(k, v string) *protobufs.KeyValue {
	return &protobufs.KeyValue{Key: k, Value: &protobufs.AnyValue{Value: &protobufs.AnyValue_StringValue{StringValue: v}}}
}

// EffectiveTOML writes cfg as TOML with every secret replaced by Redacted:
// the tokens, every header value, and the password of any proxy URL.
func EffectiveTOML(cfg config.Config) ([]byte, error) {
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(Redact(cfg)); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Redact returns cfg with every secret replaced by Redacted; cfg itself
// (its maps included) is left as it was.
func Redact(cfg config.Config) config.Config {
	secret := func(s *string) {
		if *s != "" {
			*s = Redacted
		}
	}
	secret(&cfg.Auth.Token)
	secret(&cfg.Auth.MetricsToken)
	cfg.Upstream.Headers = redactHeaders(cfg.Upstream.Headers)
	cfg.Upstream.LookupHeaders = redactHeaders(cfg.Upstream.LookupHeaders)
	cfg.Fleet.Headers = redactHeaders(cfg.Fleet.Headers)
	cfg.Control.Headers = redactHeaders(cfg.Control.Headers)
	for _, u := range []*string{&cfg.Upstream.Proxy, &cfg.Fleet.Proxy, &cfg.Control.Proxy,
		&cfg.Control.OpAMPURL, &cfg.Fleet.RemoteWriteURL, &cfg.Upstream.BaseURL,
		&cfg.Upstream.LookupBaseURL, &cfg.Upstream.StockBaseURL} {
		*u = redactURL(*u)
	}
	return cfg
}

func redactHeaders(h map[string]string) map[string]string {
	out := make(map[string]string, len(h))
	for k := range h {
		out[k] = Redacted
	}
	return out
}

// redactURL hides a URL's password (the config refuses credentials in
// URLs, but a secret must not leak should that rule ever change).
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	if _, has := u.User.Password(); !has {
		return raw
	}
	user := url.User(u.User.Username()).String()
	u.User = nil
	// Written by hand: url.URL would escape the parentheses of Redacted.
	return strings.Replace(u.String(), "://", "://"+user+":"+Redacted+"@", 1)
}
