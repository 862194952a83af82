package control

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/open-telemetry/opamp-go/client"
	"github.com/open-telemetry/opamp-go/client/types"
	"github.com/open-telemetry/opamp-go/protobufs"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/receiptd/receiptd/internal/config"
)

func (c *Client) callbacks() types.Callbacks {
	return types.Callbacks{
		OnConnect: func(context.Context) {
			c.contact(true)
		},
		OnConnectFailed: func(_ context.Context, err error) {
			c.mu.Lock()
			was, first := c.connected, !c.triedOnce
			c.connected, c.triedOnce = false, true
			// A refused WebSocket handshake fails twice, around the log
			// line with its status (refused): keep the status.
			if !(err.Error() == "websocket: bad handshake" && strings.HasPrefix(c.status.LastError, refusedPrefix)) {
				c.status.LastError = err.Error()
			}
			if c.status.FailingSince.IsZero() {
				c.status.FailingSince = time.Now().UTC()
			}
			c.mu.Unlock()
			switch {
			case tooLarge(err):
				c.log.Warn("the head office sent a message over the limit; refused unread and the connection closed, retrying (receipts are not affected)",
					zap.Int("limitBytes", MaxMessage))
			case was:
				c.log.Warn("lost the head office; receipts are not affected, retrying", zap.Error(err))
			case first:
				c.log.Warn("cannot reach the head office yet; receipts are not affected, retrying (check control.opamp_url and the till's internet)", zap.Error(err))
			}
		},
		OnError: func(_ context.Context, e *protobufs.ServerErrorResponse) {
			c.log.Warn("the head office refused a message", zap.String("message", e.GetErrorMessage()))
		},
		OnMessage: func(_ context.Context, msg *types.MessageData) {
			c.contact(true)
			if msg.RemoteConfig != nil {
				c.offer(msg.RemoteConfig)
			}
			c.pkgs.received(c.log, msg.PackagesAvailable)
		},
		GetEffectiveConfig: func(context.Context) (*protobufs.EffectiveConfig, error) {
			return c.effectiveProto()
		},
		CheckRedirect: checkRedirect,
	}
}

// contact records an answer of the server.
func (c *Client) contact(ok bool) {
	c.mu.Lock()
	was := c.connected
	c.connected, c.triedOnce = ok, true
	c.status.LastContact = time.Now().UTC()
	c.status.LastError, c.status.FailingSince = "", time.Time{}
	c.mu.Unlock()
	if ok && !was {
		c.log.Info("connected to the head office")
	}
}

// offer queues rc for applyLoop, replacing one not taken yet. A server
// may resend its config with every answer, even while the till applies
// it: a config with the hash of the one being applied, waiting, or
// already APPLIED or FAILED is not applied again; the current status is
// reported instead, so the server learns what became of it.
func (c *Client) offer(rc *protobufs.AgentRemoteConfig) {
	hash := hex.EncodeToString(rc.GetConfigHash())
	c.mu.Lock()
	done := c.status.RemoteConfig
	again := (c.applying != "" && hash == c.applying) || (c.held != "" && hash == c.held) ||
		(c.next != nil && hash == hex.EncodeToString(c.next.GetConfigHash())) ||
		(hash == done.ServerHash && (done.Status == StatusApplied || done.Status == StatusFailed))
	oc := c.opamp
	if !again {
		c.next = rc
	}
	c.mu.Unlock()
	if again {
		if st := c.remoteStatusProto(); st != nil && oc != nil {
			if err := oc.SetRemoteConfigStatus(st); err != nil {
				c.log.Debug("report remote config status", zap.Error(err))
			}
		}
		return
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// applyLoop applies the configs offer queues, one at a time, the newest
// first. A config the gate holds back waits here until its time, unless
// a newer one replaces it meanwhile.
func (c *Client) applyLoop(ctx context.Context) {
	g := &gate{every: c.opts.ApplyEvery, max: c.opts.MaxApplyBackoff}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var held *protobufs.AgentRemoteConfig
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		case <-timer.C:
		}
		c.mu.Lock()
		rc := c.next
		c.next = nil
		if rc == nil {
			rc = held // its time has come (or a wake-up of nothing: apply asks the gate again)
		}
		held, c.held = nil, ""
		if rc != nil {
			c.applying = hex.EncodeToString(rc.GetConfigHash())
		}
		c.mu.Unlock()
		if rc == nil {
			continue
		}
		wait := c.apply(ctx, rc, g)
		c.mu.Lock()
		c.applying = ""
		if wait > 0 {
			held, c.held = rc, hex.EncodeToString(rc.GetConfigHash())
		}
		c.mu.Unlock()
		if wait > 0 {
			timer.Reset(wait)
		}
	}
}

// apply checks one remote config, hands it to the Applier when g lets
// it, and reports what became of it. It returns how long a config g
// holds back must wait (reported APPLYING, saying until when, and not
// kept on disk); zero once it is APPLIED or FAILED.
func (c *Client) apply(ctx context.Context, rc *protobufs.AgentRemoteConfig, g *gate) time.Duration {
	fragment, err := fragmentOf(rc)
	out := RemoteConfig{Hash: config.FragmentHash(fragment), Status: StatusApplying, ServerHash: hex.EncodeToString(rc.GetConfigHash())}
	if err != nil {
		c.fail(out, err.Error())
		return 0
	}
	merged, mergeErr := mergeOwn(c.opts.OwnPath, c.opts.Own, fragment)
	c.mu.Lock()
	effective := c.effective.Config
	c.mu.Unlock()
	rebuild := mergeErr == nil && !reflect.DeepEqual(merged.Config, effective)
	if rebuild {
		if wait := g.wait(time.Now()); wait > 0 {
			out.Message = g.waiting(time.Now().Add(wait))
			c.tell(out)
			return wait
		}
	}
	c.report(out)
	if err := c.disk.write(receivedFile, fragment); err != nil {
		c.fail(out, "it could not be kept on disk: "+err.Error())
		return 0
	}
	if mergeErr != nil {
		c.fail(out, mergeErr.Error())
		return 0
	}
	err = c.opts.Applier.Apply(ctx, merged.Config)
	if rebuild {
		g.done(time.Now(), err == nil)
	}
	if err != nil {
		c.fail(out, "not applied, the previous configuration is back: "+err.Error())
		return 0
	}
	out.Status, out.AppliedAt = StatusApplied, time.Now().UTC()
	if err := c.disk.write(goodFile, fragment); err != nil {
		out.Message = "applied, but not kept on disk, so a restart goes back to the previous one: " + err.Error()
	}
	c.mu.Lock()
	c.effective = merged
	oc := c.opamp
	c.mu.Unlock()
	c.report(out)
	c.log.Info("remote config applied", zap.String("hash", out.Hash), zap.Strings("keys", merged.RemoteKeys))
	if oc != nil {
		if err := oc.UpdateEffectiveConfig(ctx); err != nil {
			c.log.Debug("report effective config", zap.Error(err))
		}
		if err := c.sendDescription(oc); err != nil { // the labels may have changed
			c.log.Debug("report description", zap.Error(err))
		}
	}
	return 0
}

// MaxFragment bounds a remote fragment: a whole config file is a few KiB,
// and the till's memory is for receipts.
const MaxFragment = 1 << 20

// fragmentOf is the fragment in rc's config map: its ConfigKey entry, or
// nothing at all for an empty map (the till's own file).
func fragmentOf(rc *protobufs.AgentRemoteConfig) ([]byte, error) {
	files := rc.GetConfig().GetConfigMap()
	f, ok := files[ConfigKey]
	if !ok {
		if len(files) == 0 {
			return nil, nil
		}
		return nil, fmt.Errorf("the config map has no %q (it has %s); receiptd reads only %q", ConfigKey, strings.Join(slices.Sorted(maps.Keys(files)), ", "), ConfigKey)
	}
	if n := len(f.GetBody()); n > MaxFragment {
		return nil, fmt.Errorf("%q is %d bytes; at most %d are read", ConfigKey, n, MaxFragment)
	}
	if ct := f.GetContentType(); ct != "" && ct != ContentType && ct != "text/toml" {
		return nil, fmt.Errorf("%q has content type %q; send it as %q", ConfigKey, ct, ContentType)
	}
	return bytes.Clone(f.GetBody()), nil
}

func (c *Client) fail(out RemoteConfig, message string) {
	out.Status, out.Message = StatusFailed, message
	c.mu.Lock()
	c.status.Failures++
	c.mu.Unlock()
	c.report(out)
	c.log.Warn("remote config refused; the till runs on as it was", zap.String("hash", out.Hash), zap.String("why", message))
}

// report records out, keeps it on disk and tells the server.
func (c *Client) report(out RemoteConfig) {
	if err := c.disk.saveStatus(out); err != nil {
		c.log.Warn("remote config status not kept on disk", zap.Error(err))
	}
	c.tell(out)
}

// tell records out and tells the server, without keeping it on disk: a
// config held back by the gate is not worth a write (a restart forgets
// it, and the server sends it again).
func (c *Client) tell(out RemoteConfig) {
	c.mu.Lock()
	c.status.RemoteConfig = out
	oc := c.opamp
	c.mu.Unlock()
	if oc != nil {
		if err := oc.SetRemoteConfigStatus(c.remoteStatusProto()); err != nil {
			c.log.Debug("report remote config status", zap.Error(err))
		}
	}
}

// remoteStatusProto is the saved status in OpAMP's terms; nil before any
// fragment, which asks the server to send its config.
func (c *Client) remoteStatusProto() *protobufs.RemoteConfigStatus {
	c.mu.Lock()
	rc := c.status.RemoteConfig
	c.mu.Unlock()
	hash, err := hex.DecodeString(rc.ServerHash)
	if rc.Status == "" || err != nil {
		return nil
	}
	st := map[string]protobufs.RemoteConfigStatuses{
		StatusApplying: protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLYING,
		StatusApplied:  protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED,
		StatusFailed:   protobufs.RemoteConfigStatuses_RemoteConfigStatuses_FAILED,
	}[rc.Status]
	return &protobufs.RemoteConfigStatus{LastRemoteConfigHash: hash, Status: st, ErrorMessage: rc.Message}
}

func (c *Client) effectiveProto() (*protobufs.EffectiveConfig, error) {
	c.mu.Lock()
	cfg := c.effective.Config
	c.mu.Unlock()
	body, err := EffectiveTOML(cfg)
	if err != nil {
		return nil, fmt.Errorf("control: effective config: %w", err)
	}
	return &protobufs.EffectiveConfig{ConfigMap: &protobufs.AgentConfigMap{
		ConfigMap: map[string]*protobufs.AgentConfigFile{ConfigKey: {Body: body, ContentType: ContentType}},
	}}, nil
}

// healthLoop sends the health and the description whenever they change.
func (c *Client) healthLoop(ctx context.Context, oc client.OpAMPClient) {
	t := time.NewTicker(healthEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := c.sendHealth(oc); err != nil {
			c.log.Debug("report health", zap.Error(err))
		}
		if err := c.sendDescription(oc); err != nil {
			c.log.Debug("report description", zap.Error(err))
		}
	}
}

// sendDescription hands the description to oc when it differs from the
// one handed last (PosAPI's posNo became known, the labels changed).
func (c *Client) sendDescription(oc client.OpAMPClient) error {
	d := c.identity().description()
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	if proto.Equal(d, c.sentDesc) {
		return nil
	}
	if err := oc.SetAgentDescription(d); err != nil {
		return err
	}
	c.sentDesc = d
	return nil
}

// sendHealth is sendDescription for the health.
func (c *Client) sendHealth(oc client.OpAMPClient) error {
	h := c.health().proto(c.started)
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	if proto.Equal(h, c.sentHealth) {
		return nil
	}
	if err := oc.SetHealth(h); err != nil {
		return err
	}
	c.sentHealth = h
	return nil
}
