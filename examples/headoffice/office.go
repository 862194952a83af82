package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/open-telemetry/opamp-go/server/types"
)

// Till is what the head office knows of one till, from its messages.
type Till struct {
	UID      string            `json:"uid"`
	Host     string            `json:"host"`
	Version  string            `json:"version"`
	Labels   map[string]string `json:"labels"` // the till's [fleet.labels], posNo once known
	Healthy  bool              `json:"healthy"`
	Status   string            `json:"status"` // the till's status page's first line
	Config   ConfigStatus      `json:"config"`
	LastSeen time.Time         `json:"lastSeen"`
	conn     types.Connection
}

// ConfigStatus is the till's report on the config pushed to it.
type ConfigStatus struct {
	Hash    string `json:"hash,omitempty"`
	Status  string `json:"status,omitempty"` // APPLYING, APPLIED, FAILED
	Message string `json:"message,omitempty"`
}

// rule is one push: the tills whose labels match get the fragment.
type rule struct {
	match url.Values
	body  []byte
	hash  []byte
}

func (r rule) matches(t *Till) bool {
	for k, vs := range r.match {
		if !slices.Contains(vs, t.Labels[k]) {
			return false
		}
	}
	return true
}

// office is the server's memory: the tills by UID and the pushes in the
// order made (a later rule wins for a till two rules match).
type office struct {
	log   *log.Logger
	mu    sync.Mutex
	tills map[string]*Till
	rules []rule
}

func newOffice(l *log.Logger) *office { return &office{log: l, tills: map[string]*Till{}} }

// configFor is the remote config the till should run: the last rule that
// matches it, or nil.
func (o *office) configFor(t *Till) *protobufs.AgentRemoteConfig {
	for i := len(o.rules) - 1; i >= 0; i-- {
		if r := o.rules[i]; r.matches(t) {
			return &protobufs.AgentRemoteConfig{
				ConfigHash: r.hash,
				Config: &protobufs.AgentConfigMap{ConfigMap: map[string]*protobufs.AgentConfigFile{
					"receiptd.toml": {Body: r.body, ContentType: "application/toml"},
				}},
			}
		}
	}
	return nil
}

func (o *office) onMessage(_ context.Context, conn types.Connection, msg *protobufs.AgentToServer) *protobufs.ServerToAgent {
	o.mu.Lock()
	defer o.mu.Unlock()
	uid := uidString(msg.InstanceUid)
	t := o.tills[uid]
	if t == nil {
		t = &Till{UID: uid, Labels: map[string]string{}}
		o.tills[uid] = t
		o.log.Printf("a till connected: %s", uid)
	}
	t.conn, t.LastSeen = conn, time.Now()
	if d := msg.AgentDescription; d != nil {
		t.describe(d)
	}
	if h := msg.Health; h != nil {
		t.Healthy, t.Status = h.Healthy, h.Status
	}
	if s := msg.RemoteConfigStatus; s != nil {
		was := t.Config.Status
		t.Config = ConfigStatus{Hash: hexOf(s.LastRemoteConfigHash), Status: strings.TrimPrefix(s.Status.String(), "RemoteConfigStatuses_"), Message: s.ErrorMessage}
		if t.Config.Status != was {
			o.log.Printf("till %s: config %s %s", uid, t.Config.Status, t.Config.Message)
		}
	}
	resp := &protobufs.ServerToAgent{InstanceUid: msg.InstanceUid}
	// t.Config is the till's last report (this message's, when it has
	// one): a till that reported the config's hash has it.
	if rc := o.configFor(t); rc != nil && t.Config.Hash != hexOf(rc.ConfigHash) {
		resp.RemoteConfig = rc
	}
	return resp
}

// describe takes the till's agent description: receiptd sends
// service.version and host.name as identifying attributes and its labels
// as non-identifying ones (docs/contract.md, "Managing the fleet").
func (t *Till) describe(d *protobufs.AgentDescription) {
	for _, kv := range d.IdentifyingAttributes {
		switch v := kv.GetValue().GetStringValue(); kv.Key {
		case "service.version":
			t.Version = v
		case "host.name":
			t.Host = v
		}
	}
	for _, kv := range d.NonIdentifyingAttributes {
		if kv.Key != "os.type" {
			t.Labels[kv.Key] = kv.GetValue().GetStringValue()
		}
	}
}

func (o *office) onClose(conn types.Connection) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, t := range o.tills {
		if t.conn == conn {
			t.conn = nil
		}
	}
}

func (o *office) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /tills", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(o.list())
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) { o.table(w) })
	mux.HandleFunc("PUT /config", o.putConfig)
	mux.HandleFunc("DELETE /config", o.deleteConfig)
	return mux
}

// list is every till seen, sorted by UID.
func (o *office) list() []Till {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]Till, 0, len(o.tills))
	for _, t := range o.tills {
		c := *t
		c.conn = nil
		c.Labels = map[string]string{}
		for k, v := range t.Labels {
			c.Labels[k] = v
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UID < out[j].UID })
	return out
}

func (o *office) table(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TILL\tLABELS\tVERSION\tHEALTH\tCONFIG\tLAST SEEN")
	for _, t := range o.list() {
		var labels []string
		for k, v := range t.Labels {
			labels = append(labels, k+"="+v)
		}
		sort.Strings(labels)
		health := "healthy"
		if !t.Healthy {
			health = "unhealthy: " + t.Status
		}
		cfg := t.Config.Status
		if t.Config.Message != "" {
			cfg += ": " + t.Config.Message
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.UID, strings.Join(labels, ","), t.Version, health, cfg,
			t.LastSeen.Format(time.RFC3339))
	}
	_ = tw.Flush()
}

func (o *office) putConfig(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxFragment+1))
	if err != nil || len(body) > maxFragment {
		http.Error(w, "a fragment of at most 1 MiB, please", http.StatusRequestEntityTooLarge)
		return
	}
	rl := rule{match: r.URL.Query(), body: body, hash: fragmentHash(body)}
	o.mu.Lock()
	o.rules = slices.DeleteFunc(o.rules, func(x rule) bool { return sameMatch(x.match, rl.match) })
	o.rules = append(o.rules, rl)
	var push []*Till
	n := 0
	for _, t := range o.tills {
		if rl.matches(t) {
			n++
			if t.conn != nil {
				push = append(push, t)
			}
		}
	}
	msgs := make([]*protobufs.ServerToAgent, len(push))
	for i, t := range push {
		msgs[i] = &protobufs.ServerToAgent{InstanceUid: uidBytes(t.UID), RemoteConfig: o.configFor(t)}
	}
	o.mu.Unlock()
	for i, t := range push {
		_ = t.conn.Send(r.Context(), msgs[i]) // over HTTP polling it goes with the next answer
	}
	o.log.Printf("config %s set for %d tills matching %q", hexOf(rl.hash)[:12], n, r.URL.RawQuery)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"hash": hexOf(rl.hash), "tills": n})
}

func (o *office) deleteConfig(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	before := len(o.rules)
	o.rules = slices.DeleteFunc(o.rules, func(x rule) bool { return sameMatch(x.match, r.URL.Query()) })
	gone := before - len(o.rules)
	o.mu.Unlock()
	if gone == 0 {
		http.Error(w, "no config is set for "+r.URL.RawQuery, http.StatusNotFound)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func sameMatch(a, b url.Values) bool { return a.Encode() == b.Encode() }

// uidString is an instance UID as receiptd prints it (a UUID).
func uidString(b []byte) string {
	if u, err := uuid.FromBytes(b); err == nil {
		return u.String()
	}
	return hexOf(b)
}

func uidBytes(s string) []byte {
	if u, err := uuid.Parse(s); err == nil {
		return u[:]
	}
	b, _ := hex.DecodeString(s)
	return b
}
