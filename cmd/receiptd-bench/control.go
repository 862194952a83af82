package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/open-telemetry/opamp-go/server"
	"github.com/open-telemetry/opamp-go/server/types"

	"github.com/receiptd/receiptd/internal/config"
)

// controlTarget is issue 31's bound on the OpAMP client's idle cost.
const controlTarget = 5 * time.Second // CPU per hour, [control] on

var controlOnly = flag.Bool("control-only", false, "run only the control step: an idle daemon with [control] on, over WebSocket and HTTP polling")

// controlResult is the idle cost with the head office channel on, over
// each transport, at the default poll_every.
type controlResult struct {
	binary             string // binaryReport's line
	ws, http           idleResult
	wsMsgs, httpMsgs   int64 // messages the head office received in each window
	wsConns, httpConns int64
}

// headOfficeCounter is an OpAMP server (opamp-go's) that accepts every
// agent, sends it nothing and counts what it receives.
type headOfficeCounter struct {
	srv         server.OpAMPServer
	msgs, conns atomic.Int64
}

func startHeadOfficeCounter() (*headOfficeCounter, error) {
	h := &headOfficeCounter{srv: server.New(nil)}
	err := h.srv.Start(server.StartSettings{ListenEndpoint: "127.0.0.1:0", Settings: server.Settings{
		Callbacks: types.Callbacks{OnConnecting: func(*http.Request) types.ConnectionResponse {
			h.conns.Add(1)
			return types.ConnectionResponse{Accept: true, ConnectionCallbacks: types.ConnectionCallbacks{
				OnMessage: func(_ context.Context, _ types.Connection, m *protobufs.AgentToServer) *protobufs.ServerToAgent {
					h.msgs.Add(1)
					return &protobufs.ServerToAgent{InstanceUid: m.GetInstanceUid()}
				},
			}}
		}},
	}})
	if err != nil {
		return nil, fmt.Errorf("control: start OpAMP server: %w", err)
	}
	return h, nil
}

func (h *headOfficeCounter) url(scheme string) string {
	return scheme + "://" + h.srv.Addr().String() + "/v1/opamp"
}

// runControl measures an idle daemon with [control] on, over WebSocket
// then HTTP polling, each over at least two poll_every (so heartbeats and
// polls fall in the window), beside runIdle's reference.
func (b *bench) runControl(ctx context.Context, o options) (controlResult, error) {
	var r controlResult
	var err error
	if r.binary, err = binaryReport(b.bin); err != nil {
		return r, err
	}
	defer func() { b.fleet = nil }()
	window := max(o.idleFor, 2*config.Default().Control.PollEvery.Duration+5*time.Second)
	for _, tr := range []struct {
		scheme      string
		res         *idleResult
		msgs, conns *int64
	}{{"ws", &r.ws, &r.wsMsgs, &r.wsConns}, {"http", &r.http, &r.httpMsgs, &r.httpConns}} {
		h, err := startHeadOfficeCounter()
		if err != nil {
			return r, err
		}
		b.fleet = func(c *config.Config) { c.Control.OpAMPURL = h.url(tr.scheme) }
		*tr.res, err = b.runIdle(ctx, window)
		stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = h.srv.Stop(stopCtx)
		cancel()
		if err != nil {
			return r, err
		}
		*tr.msgs, *tr.conns = h.msgs.Load(), h.conns.Load()
		if *tr.msgs == 0 {
			return r, fmt.Errorf("control: the head office heard nothing over %s in %s", tr.scheme, window)
		}
	}
	return r, nil
}

// report prints the channel's idle cost beside the daemon's without it
// (ref.idle, zero when the step ran alone).
func (r controlResult) report(ref results) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Head office channel ([control], OpAMP), idle, poll_every %s:\n", config.Default().Control.PollEvery.Duration)
	b.WriteString(r.binary)
	for _, t := range []struct {
		name        string
		res         idleResult
		msgs, conns int64
	}{{"WebSocket", r.ws, r.wsMsgs, r.wsConns}, {"HTTP polling", r.http, r.httpMsgs, r.httpConns}} {
		verdict := "PASS"
		if t.res.cpuPerHour() >= controlTarget {
			verdict = "MISS"
		}
		fmt.Fprintf(&b, "- idle daemon CPU per hour, [control] on over %s (%s window, %d messages, %d connections): %s; off: %s (target on < %s) %s\n",
			t.name, t.res.window, t.msgs, t.conns, t.res.cpuPerHour().Round(time.Millisecond),
			ref.idle.cpuPerHour().Round(time.Millisecond), controlTarget, verdict)
	}
	return b.String()
}

// controlOnlyStep runs the idle reference and the control step alone.
func (b *bench) controlOnlyStep(ctx context.Context, o options) error {
	var ref results
	var err error
	if ref.idle, err = b.runIdle(ctx, o.idleFor); err != nil {
		return err
	}
	r, err := b.runControl(ctx, o)
	if err != nil {
		return err
	}
	fmt.Print(r.report(ref))
	return nil
}
