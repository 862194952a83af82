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
	UID     string            `json:"uid"`
	Host    string            `json:"host"`
	Version string            `json:"version"`
	Labels  map[string]string `json:"labels"` // the till's [fleet.labels], posNo once known
	Healthy bool              `json:"healthy"`
	Status  string            `json:"status"`       // the till's status page's first line
	OS      string            `json:"os,omitempty"` // os.type
	// AcceptsPackages: the till announces AcceptsPackages (receiptd does
	// with update.trusted_keys set); only such tills join a release's waves.
	AcceptsPackages bool           `json:"acceptsPackages"`
	Config          ConfigStatus   `json:"config"`
	Package         *PackageStatus `json:"package,omitempty"` // its report on the package receiptd
	LastSeen        time.Time      `json:"lastSeen"`

	conn      types.Connection
	base      string // the scheme and host it reached the head office by, for download URLs
	offerSeen []byte // the all_packages_hash it last reported
	offerSent []byte // the all_packages_hash last offered to it
}

// PackageStatus is the till's report on the package receiptd (OpAMP's
// PackageStatus): the version and file it has, the ones offered, and how
// the offer goes.
type PackageStatus struct {
	Status         string `json:"status"`            // INSTALLED, INSTALL_PENDING, INSTALLING, INSTALL_FAILED, DOWNLOADING
	Version        string `json:"version,omitempty"` // agent_has_version
	Hash           string `json:"hash,omitempty"`    // agent_has_hash, hex
	OfferedVersion string `json:"offeredVersion,omitempty"`
	OfferedHash    string `json:"offeredHash,omitempty"`
	Message        string `json:"message,omitempty"` // error_message: "rolled back: ...", a refusal's reason
}

var packageStatusNames = map[protobufs.PackageStatusEnum]string{
	protobufs.PackageStatusEnum_PackageStatusEnum_Installed:      "INSTALLED",
	protobufs.PackageStatusEnum_PackageStatusEnum_InstallPending: "INSTALL_PENDING",
	protobufs.PackageStatusEnum_PackageStatusEnum_Installing:     "INSTALLING",
	protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed:  "INSTALL_FAILED",
	protobufs.PackageStatusEnum_PackageStatusEnum_Downloading:    "DOWNLOADING",
}

// packageStatus is the till's report on receiptd from its PackageStatuses,
// or nil when it names no such package.
func packageStatus(s *protobufs.PackageStatuses) *PackageStatus {
	p := s.GetPackages()[packageName]
	if p == nil {
		return nil
	}
	name, ok := packageStatusNames[p.Status]
	if !ok {
		name = p.Status.String()
	}
	return &PackageStatus{Status: name, Version: p.AgentHasVersion, Hash: hexOf(p.AgentHasHash),
		OfferedVersion: p.ServerOfferedVersion, OfferedHash: hexOf(p.ServerOfferedHash), Message: p.ErrorMessage}
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

func (r rule) matches(t *Till) bool { return labelsMatch(r.match, t) }

// labelsMatch reports whether t has, for every label the query names, one
// of the values it gives; an empty query matches every till.
func labelsMatch(match url.Values, t *Till) bool {
	for k, vs := range match {
		if !slices.Contains(vs, t.Labels[k]) {
			return false
		}
	}
	return true
}

// office is the server's memory: the tills by UID and the pushes in the
// order made (a later rule wins for a till two rules match).
type office struct {
	log     *log.Logger
	mu      sync.Mutex
	tills   map[string]*Till
	rules   []rule
	release *release // nil: none offered
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

// onMessage takes a till's message and answers it; base is the scheme
// and host the till reached the head office by.
func (o *office) onMessage(ctx context.Context, base string, conn types.Connection, msg *protobufs.AgentToServer) *protobufs.ServerToAgent {
	o.mu.Lock()
	resp, sends := o.take(base, conn, msg)
	o.mu.Unlock()
	o.send(ctx, sends)
	return resp
}

// take records a till's message and returns its answer and what the
// message made owed to other tills (a wave that started); o.mu is held.
func (o *office) take(base string, conn types.Connection, msg *protobufs.AgentToServer) (*protobufs.ServerToAgent, []outgoing) {
	uid := uidString(msg.InstanceUid)
	t := o.tills[uid]
	if t == nil {
		t = &Till{UID: uid, Labels: map[string]string{}}
		o.tills[uid] = t
		o.log.Printf("a till connected: %s", uid)
	}
	t.conn, t.base, t.LastSeen = conn, base, time.Now()
	if d := msg.AgentDescription; d != nil {
		t.describe(d)
	}
	if c := msg.Capabilities; c != 0 { // 0: unchanged
		t.AcceptsPackages = c&uint64(protobufs.AgentCapabilities_AgentCapabilities_AcceptsPackages) != 0
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
	if s := msg.PackageStatuses; s != nil {
		was := t.Package
		t.Package, t.offerSeen = packageStatus(s), s.ServerProvidedAllPackagesHash
		if p := t.Package; p != nil && (was == nil || *was != *p) {
			o.log.Printf("till %s: receiptd %s %s %s", uid, p.Status, p.Version, p.Message)
		}
		o.observe(t)
	}
	sends := o.progress(t)
	return o.answerFor(t), sends
}

// answerFor is what t is owed: the config of its rule while its last
// report does not name that config's hash (t.Config is that report), and
// the packages offered to it while it has not reported their hash.
func (o *office) answerFor(t *Till) *protobufs.ServerToAgent {
	resp := &protobufs.ServerToAgent{InstanceUid: uidBytes(t.UID), PackagesAvailable: o.packagesFor(t)}
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
		if kv.Key == "os.type" {
			t.OS = kv.GetValue().GetStringValue()
		} else {
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
	mux.HandleFunc("PUT /release", o.putRelease)
	mux.HandleFunc("GET /release", o.getRelease)
	mux.HandleFunc("DELETE /release", o.deleteRelease)
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
		if t.Package != nil {
			p := *t.Package
			c.Package = &p
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UID < out[j].UID })
	return out
}

func (o *office) table(w io.Writer) {
	o.mu.Lock()
	rv := o.releaseView()
	o.mu.Unlock()
	if rv != nil {
		fmt.Fprintf(w, "%s\n\n", rv)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TILL\tLABELS\tVERSION\tHEALTH\tCONFIG\tPACKAGE\tLAST SEEN")
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
		pkg := ""
		if p := t.Package; p != nil {
			pkg = strings.TrimSpace(p.Status + " " + p.Version)
			if p.Message != "" {
				pkg += ": " + p.Message
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.UID, strings.Join(labels, ","), t.Version, health, cfg,
			pkg, t.LastSeen.Format(time.RFC3339))
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
	sends := make([]outgoing, len(push))
	for i, t := range push {
		sends[i] = outgoing{t.conn, o.answerFor(t)}
	}
	o.mu.Unlock()
	o.send(r.Context(), sends)
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
