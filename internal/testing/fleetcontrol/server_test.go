package fleetcontrol

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/open-telemetry/opamp-go/server"
	"github.com/open-telemetry/opamp-go/server/types"
)

// configKey and contentType are the config-map entry receiptd reads
// (docs/contract.md, "Managing the fleet").
const (
	configKey   = "receiptd.toml"
	contentType = "application/toml"
)

// headOffice is a head office's OpAMP server as a chain would build it on
// opamp-go's server package: it remembers every agent by instance UID
// (kept across its own restarts, as a server's database would), and hands
// each the remote config chosen for it: pushed at once over WebSocket,
// and in the answer to the next poll over HTTP.
type headOffice struct {
	addr string // host:port, the same across restarts

	mu      sync.Mutex
	srv     server.OpAMPServer // nil while stopped
	agents  map[string]*agent
	desired map[string]*protobufs.AgentRemoteConfig // by instance UID
}

// agent is what the head office knows of one till.
type agent struct {
	uid       string
	ws        bool              // last connected over WebSocket
	conn      types.Connection  // the WebSocket connection, nil otherwise
	attrs     map[string]string // the description's attributes, both kinds
	remote    *protobufs.RemoteConfigStatus
	effective string // the reported receiptd.toml
	lastSeen  time.Time
}

func newHeadOffice(addr string) *headOffice {
	return &headOffice{addr: addr, agents: map[string]*agent{}, desired: map[string]*protobufs.AgentRemoteConfig{}}
}

// start listens on h.addr (again, after stop).
func (h *headOffice) start() error {
	srv := server.New(nil)
	err := srv.Start(server.StartSettings{
		ListenEndpoint: h.addr,
		Settings:       server.Settings{Callbacks: types.Callbacks{OnConnecting: h.onConnecting}},
	})
	if err != nil {
		return fmt.Errorf("start OpAMP server on %s: %w", h.addr, err)
	}
	h.mu.Lock()
	h.srv = srv
	h.mu.Unlock()
	return nil
}

// stop closes the listener and every connection.
func (h *headOffice) stop() error {
	h.mu.Lock()
	srv := h.srv
	h.srv = nil
	for _, a := range h.agents {
		a.conn = nil
	}
	h.mu.Unlock()
	if srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Stop(ctx)
}

func (h *headOffice) onConnecting(r *http.Request) types.ConnectionResponse {
	ws := r.Header.Get("Upgrade") == "websocket"
	return types.ConnectionResponse{Accept: true, ConnectionCallbacks: types.ConnectionCallbacks{
		OnMessage: func(_ context.Context, conn types.Connection, msg *protobufs.AgentToServer) *protobufs.ServerToAgent {
			return h.onMessage(conn, ws, msg)
		},
		OnConnectionClose: func(conn types.Connection) {
			h.mu.Lock()
			defer h.mu.Unlock()
			for _, a := range h.agents {
				if a.conn == conn {
					a.conn = nil
				}
			}
		},
	}}
}

// onMessage records what the agent reported and answers with its remote
// config, if one is chosen for it that it has not reported on. An agent the head office has not heard from is asked for
// its full state.
func (h *headOffice) onMessage(conn types.Connection, ws bool, msg *protobufs.AgentToServer) *protobufs.ServerToAgent {
	uid := hex.EncodeToString(msg.GetInstanceUid())
	h.mu.Lock()
	defer h.mu.Unlock()
	out := &protobufs.ServerToAgent{InstanceUid: msg.GetInstanceUid()}
	a, known := h.agents[uid]
	if !known {
		a = &agent{uid: uid, attrs: map[string]string{}}
		h.agents[uid] = a
	}
	a.ws, a.lastSeen = ws, time.Now()
	if ws {
		a.conn = conn
	}
	h.record(a, msg)
	if a.attrs["service.name"] == "" {
		out.Flags = uint64(protobufs.ServerToAgentFlags_ServerToAgentFlags_ReportFullState)
	}
	// As opamp-go's example server does: the config goes with an answer
	// until the agent reports a status for it.
	if rc := h.desired[uid]; rc != nil && !bytes.Equal(a.remote.GetLastRemoteConfigHash(), rc.GetConfigHash()) {
		out.RemoteConfig = rc
	}
	return out
}

func (h *headOffice) record(a *agent, msg *protobufs.AgentToServer) {
	if d := msg.GetAgentDescription(); d != nil {
		for _, kv := range append(d.GetIdentifyingAttributes(), d.GetNonIdentifyingAttributes()...) {
			a.attrs[kv.GetKey()] = kv.GetValue().GetStringValue()
		}
	}
	if rs := msg.GetRemoteConfigStatus(); rs != nil {
		a.remote = rs
	}
	if ec := msg.GetEffectiveConfig(); ec != nil {
		a.effective = string(ec.GetConfigMap().GetConfigMap()[configKey].GetBody())
	}
}

// setConfig chooses fragment for every agent pick selects and pushes it
// to those connected over WebSocket; it returns their UIDs and the
// config's hash.
func (h *headOffice) setConfig(pick func(attrs map[string]string) bool, fragment string) ([]string, []byte) {
	sum := sha256.Sum256([]byte(fragment))
	rc := &protobufs.AgentRemoteConfig{ConfigHash: sum[:], Config: &protobufs.AgentConfigMap{
		ConfigMap: map[string]*protobufs.AgentConfigFile{configKey: {Body: []byte(fragment), ContentType: contentType}},
	}}
	h.mu.Lock()
	var uids []string
	var push []types.Connection
	for uid, a := range h.agents {
		if !pick(a.attrs) {
			continue
		}
		uids = append(uids, uid)
		h.desired[uid] = rc
		if a.conn != nil {
			push = append(push, a.conn)
		}
	}
	h.mu.Unlock()
	for _, c := range push {
		// A failed push is caught up by the next heartbeat's answer.
		_ = c.Send(context.Background(), &protobufs.ServerToAgent{RemoteConfig: rc})
	}
	return uids, sum[:]
}

// agentView is a copy of one agent's state, for the test to read.
type agentView struct {
	UID, Shop, Till string
	WS              bool
	Status          protobufs.RemoteConfigStatuses
	Hash            []byte
	Message         string
	Effective       string
	LastSeen        time.Time
}

// byTill returns every agent's state by its till label.
func (h *headOffice) byTill() map[string]agentView {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]agentView, len(h.agents))
	for uid, a := range h.agents {
		v := agentView{UID: uid, Shop: a.attrs["shop"], Till: a.attrs["till"], WS: a.ws, Effective: a.effective,
			LastSeen: a.lastSeen}
		if a.remote != nil {
			v.Status, v.Hash, v.Message = a.remote.GetStatus(), a.remote.GetLastRemoteConfigHash(), a.remote.GetErrorMessage()
		}
		out[a.attrs["till"]] = v
	}
	return out
}
