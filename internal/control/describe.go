package control

import (
	"bytes"
	"maps"
	"runtime"
	"slices"
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

// EffectiveTOML writes cfg as TOML. Every secret in it is a
// config.Secret, which TOML writes as "(set)", and no URL key holds a
// password (config.URLProblem refuses one): nothing is hidden by a list
// here that a new key could be missing from.
func EffectiveTOML(cfg config.Config) ([]byte, error) {
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(cfg); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
