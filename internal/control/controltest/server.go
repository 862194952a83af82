// Package controltest is a real OpAMP server for tests, built on
// opamp-go's server package and listening on 127.0.0.1:0, as a head
// office would run one. It records what each agent reported (description,
// health, effective config, remote config status), and sends a remote
// config to the agents a test picks (by UID, or by a label of their
// description: AttrIs): at once over WebSocket, with the next poll's
// answer over HTTP. It keeps what it knows across Stop and Restart on the
// same address, as a head office's database would. Only tests import it.
package controltest

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/open-telemetry/opamp-go/server"
	"github.com/open-telemetry/opamp-go/server/types"
	"google.golang.org/protobuf/proto"
)

// Agent is what one agent has reported so far.
type Agent struct {
	UID          string
	Description  *protobufs.AgentDescription
	Health       *protobufs.ComponentHealth
	Effective    []byte // the effective config's receiptd.toml body
	RemoteStatus *protobufs.RemoteConfigStatus
	// Packages is the agent's last package statuses; Capabilities its
	// last capabilities.
	Packages *protobufs.PackageStatuses
	// PackageReports is every package statuses message, in order.
	PackageReports []*protobufs.PackageStatuses
	Capabilities   uint64
	Messages       int
	// Header is the HTTP header of the agent's last connection (WebSocket)
	// or request (HTTP polling).
	Header http.Header
	// LastSeen is when the agent's last message arrived.
	LastSeen time.Time
}

// WebSocket reports whether the agent's last message came over a
// WebSocket connection; false: over HTTP polling.
func (a Agent) WebSocket() bool { return strings.EqualFold(a.Header.Get("Upgrade"), "websocket") }

// Attr returns the description's attribute key, identifying or not, or "".
func (a Agent) Attr(key string) string {
	if a.Description == nil {
		return ""
	}
	for _, kv := range slices.Concat(a.Description.IdentifyingAttributes, a.Description.NonIdentifyingAttributes) {
		if kv.Key == key {
			return kv.GetValue().GetStringValue()
		}
	}
	return ""
}

// AttrIs picks, for SetConfig and Count, the agents whose description
// says key = value: a label of the till's [fleet.labels], such as its
// shop.
func AttrIs(key, value string) func(Agent) bool {
	return func(a Agent) bool { return a.Attr(key) == value }
}

// Server is a running OpAMP server. Its methods are safe for concurrent
// use.
type Server struct {
	scheme string // ws, or wss over TLS
	tls    *tls.Config

	mu      sync.Mutex
	srv     server.OpAMPServer
	addr    string
	agents  map[string]*Agent
	configs map[string]*protobufs.AgentRemoteConfig // by agent UID
	offers  map[string]*protobufs.PackagesAvailable // by agent UID
	conns   map[string]types.Connection
	// open is every connection made and not yet closed, an agent's first
	// message or not; stopped: Stop was called and no listen since.
	open    map[types.Connection]struct{}
	stopped bool
	// resend: answer every message with the agent's config, whatever
	// status it reported (ResendAlways).
	resend bool

	maxSent atomic.Int64 // MaxSent
}

// Start starts a server on 127.0.0.1:0, stopped when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	return start(t, nil)
}

func start(t testing.TB, tlsConfig *tls.Config) *Server {
	t.Helper()
	s := &Server{
		scheme:  "ws",
		tls:     tlsConfig,
		agents:  map[string]*Agent{},
		configs: map[string]*protobufs.AgentRemoteConfig{},
		offers:  map[string]*protobufs.PackagesAvailable{},
		conns:   map[string]types.Connection{},
		open:    map[types.Connection]struct{}{},
	}
	if tlsConfig != nil {
		s.scheme = "wss"
	}
	if err := s.listen("127.0.0.1:0"); err != nil {
		t.Fatalf("start OpAMP server: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Restart starts the server again, after Stop, on the same address, with
// what it knew of the agents and the configs set: a head office back from
// an outage.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if err := s.listen(s.address()); err != nil {
		t.Fatalf("restart OpAMP server on %s: %v", s.address(), err)
	}
}

func (s *Server) listen(addr string) error {
	srv := server.New(nil)
	err := srv.Start(server.StartSettings{
		ListenEndpoint: addr,
		TLSConfig:      s.tls,
		HTTPMiddleware: s.counted,
		Settings: server.Settings{Callbacks: types.Callbacks{
			OnConnecting: func(r *http.Request) types.ConnectionResponse {
				header := r.Header.Clone()
				return types.ConnectionResponse{Accept: true, ConnectionCallbacks: types.ConnectionCallbacks{
					OnConnected:       s.onConnected,
					OnConnectionClose: s.onConnectionClose,
					OnMessage: func(_ context.Context, conn types.Connection, msg *protobufs.AgentToServer) *protobufs.ServerToAgent {
						return s.onMessage(conn, header, msg)
					},
				}}
			},
		}},
	})
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.srv, s.addr, s.stopped = srv, srv.Addr().String(), false
	s.mu.Unlock()
	return nil
}

// onConnected keeps conn to be closed by Stop; one made as Stop runs (its
// upgrade before the listener closed) is closed at once. An agent counts
// itself connected from here, before its first message reaches onMessage.
func (s *Server) onConnected(_ context.Context, conn types.Connection) {
	s.mu.Lock()
	stopped := s.stopped
	if !stopped {
		s.open[conn] = struct{}{}
	}
	s.mu.Unlock()
	if stopped {
		_ = conn.Disconnect()
	}
}

func (s *Server) onConnectionClose(conn types.Connection) {
	s.mu.Lock()
	delete(s.open, conn)
	s.mu.Unlock()
}

// Stop stops the server and closes every WebSocket connection (opamp-go's
// Stop leaves them open: http.Server.Shutdown does not close hijacked
// connections, and their agents would go on being answered); calling it
// again does nothing.
func (s *Server) Stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.mu.Lock()
	srv := s.srv
	s.stopped = true
	s.mu.Unlock()
	_ = srv.Stop(ctx)
	s.mu.Lock()
	conns := slices.Collect(maps.Keys(s.open))
	clear(s.open)
	clear(s.conns)
	s.mu.Unlock()
	for _, c := range conns {
		_ = c.Disconnect() // an HTTP connection has nothing to close
	}
}

// WSURL is the server's WebSocket URL; HTTPURL its HTTP polling URL.
func (s *Server) WSURL() string { return s.scheme + "://" + s.address() + "/v1/opamp" }
func (s *Server) HTTPURL() string {
	return strings.Replace(s.scheme, "ws", "http", 1) + "://" + s.address() + "/v1/opamp"
}

func (s *Server) address() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

func (s *Server) onMessage(conn types.Connection, header http.Header, msg *protobufs.AgentToServer) *protobufs.ServerToAgent {
	uid := uidString(msg.InstanceUid)
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.agents[uid]
	if a == nil {
		a = &Agent{UID: uid}
		s.agents[uid] = a
	}
	a.Messages++
	a.Header, a.LastSeen = header, time.Now()
	if msg.AgentDescription != nil {
		a.Description = msg.AgentDescription
	}
	if msg.Health != nil {
		a.Health = msg.Health
	}
	if f := msg.GetEffectiveConfig().GetConfigMap().GetConfigMap()["receiptd.toml"]; f != nil {
		a.Effective = f.Body
	}
	if msg.RemoteConfigStatus != nil {
		a.RemoteStatus = msg.RemoteConfigStatus
	}
	if msg.PackageStatuses != nil {
		a.Packages = msg.PackageStatuses
		a.PackageReports = append(a.PackageReports, msg.PackageStatuses)
	}
	if msg.Capabilities != 0 {
		a.Capabilities = msg.Capabilities
	}
	s.conns[uid] = conn
	resp := &protobufs.ServerToAgent{InstanceUid: msg.InstanceUid}
	if rc := s.configs[uid]; rc != nil && (s.resend || !slices.Equal(a.RemoteStatus.GetLastRemoteConfigHash(), rc.ConfigHash)) {
		resp.RemoteConfig = rc
	}
	if pa := s.offers[uid]; pa != nil && !slices.Equal(a.Packages.GetServerProvidedAllPackagesHash(), pa.AllPackagesHash) {
		resp.PackagesAvailable = pa
	}
	return resp
}

// ResendAlways makes the server answer every message of an agent with the
// config set for it, even once the agent reported it APPLYING, APPLIED
// or FAILED, as some servers do (the OpAMP specification allows it): a
// till must not apply the same config again.
func (s *Server) ResendAlways() {
	s.mu.Lock()
	s.resend = true
	s.mu.Unlock()
}

// Agents returns a copy of every agent seen, in no order.
func (s *Server) Agents() []Agent {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Agent, 0, len(s.agents))
	for _, a := range s.agents {
		out = append(out, *a)
	}
	return out
}

// Agent returns a copy of the agent with uid.
func (s *Server) Agent(uid string) (Agent, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.agents[uid]
	if !ok {
		return Agent{}, false
	}
	return *a, true
}

// Count returns how many agents seen match.
func (s *Server) Count(match func(Agent) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, a := range s.agents {
		if match(*a) {
			n++
		}
	}
	return n
}

// ByAttr returns a copy of every agent seen by the value of its
// description's attribute key, for a label each till has its own of
// (till); of agents with the same value, one is kept.
func (s *Server) ByAttr(key string) map[string]Agent {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]Agent, len(s.agents))
	for _, a := range s.agents {
		out[a.Attr(key)] = *a
	}
	return out
}

// Summary is a line for every agent seen, sorted, for a test's failure
// message: the values of the attributes keys, the transport, the last
// remote config status and its message, when it was last seen.
func (s *Server) Summary(keys ...string) string {
	var lines []string
	for _, a := range s.Agents() {
		var b strings.Builder
		for _, k := range keys {
			fmt.Fprintf(&b, "%s=%s ", k, a.Attr(k))
		}
		transport := "http"
		if a.WebSocket() {
			transport = "ws"
		}
		fmt.Fprintf(&b, "uid=%s %s %v %q seen %s", a.UID, transport, a.RemoteStatus.GetStatus(),
			a.RemoteStatus.GetErrorMessage(), a.LastSeen.Format(time.StampMilli))
		lines = append(lines, b.String())
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// SetConfig sets fragment as the remote config (config-map key
// receiptd.toml) of every agent seen for which match is true, pushes it
// at once to those on WebSocket, and returns the server's hash of it and
// how many agents it was set for.
func (s *Server) SetConfig(match func(Agent) bool, fragment string) (hash []byte, n int) {
	sum := sha256.Sum256([]byte(fragment))
	return s.setConfig(match, fragment, sum[:])
}

// SetConfigHash is SetConfig under the server's hash given, for a
// server that sends the same fragment again as a new config.
func (s *Server) SetConfigHash(match func(Agent) bool, fragment string, hash []byte) []byte {
	h, _ := s.setConfig(match, fragment, hash)
	return h
}

func (s *Server) setConfig(match func(Agent) bool, fragment string, hash []byte) ([]byte, int) {
	rc := &protobufs.AgentRemoteConfig{
		ConfigHash: hash,
		Config: &protobufs.AgentConfigMap{ConfigMap: map[string]*protobufs.AgentConfigFile{
			"receiptd.toml": {Body: []byte(fragment), ContentType: "application/toml"},
		}},
	}
	n := s.push(match, func(uid string) { s.configs[uid] = rc }, func(msg *protobufs.ServerToAgent) {
		msg.RemoteConfig = proto.Clone(rc).(*protobufs.AgentRemoteConfig)
	})
	return hash, n
}

// Offer offers pa (a release) to every agent seen for which match is
// true: pushed at once over WebSocket, and with every answer until the
// agent reports statuses for its all_packages_hash. It returns how many
// agents it was offered to.
func (s *Server) Offer(match func(Agent) bool, pa *protobufs.PackagesAvailable) int {
	return s.push(match, func(uid string) { s.offers[uid] = pa }, func(msg *protobufs.ServerToAgent) {
		msg.PackagesAvailable = proto.Clone(pa).(*protobufs.PackagesAvailable)
	})
}

// push keeps what set keeps for every agent seen that match picks (s.mu
// held), and sends it at once, as fill writes it into a message, to those
// on WebSocket; none while stopped: the agent gets it with its first
// answer after Restart, as HTTP agents with their next poll. It returns
// how many agents were picked.
func (s *Server) push(match func(Agent) bool, set func(uid string), fill func(*protobufs.ServerToAgent)) int {
	s.mu.Lock()
	var push []types.Connection
	var uids [][]byte
	n := 0
	for uid, a := range s.agents {
		if !match(*a) {
			continue
		}
		set(uid)
		n++
		if conn := s.conns[uid]; conn != nil {
			push = append(push, conn)
			u := uuid.MustParse(uid)
			uids = append(uids, u[:])
		}
	}
	s.mu.Unlock()
	for i, conn := range push {
		msg := &protobufs.ServerToAgent{InstanceUid: uids[i]}
		fill(msg)
		_ = conn.Send(context.Background(), msg)
	}
	return n
}

func uidString(b []byte) string {
	u, err := uuid.FromBytes(b)
	if err != nil {
		return string(b)
	}
	return u.String()
}
