package control_test

import (
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/control"
	"github.com/receiptd/receiptd/internal/control/controltest"
)

// regexpWaiting is the message of a config the till holds back.
var regexpWaiting = regexp.MustCompile(`^waiting until \d\d:\d\d:\d\d UTC before applying it`)

// TestClientRateLimitsRebuilds: a head office sending a new config every
// 100 ms for 3 s (30 configs, each a change) costs at most one rebuild
// per ApplyEvery (2 s here, a minute by default), the first at once; the
// ones in between are reported APPLYING and waiting, and the last one
// sent is the one in effect at the end. Before, every config was applied.
func TestClientRateLimitsRebuilds(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			srv := controltest.Start(t)
			const every = 2 * time.Second
			tl := startTillOpts(t, tr.url(srv), "", func(o *control.Options) { o.ApplyEvery = every })
			uid := tl.client.InstanceUID()
			agent(t, srv, uid, func(a controltest.Agent) bool { return a.Description != nil })
			this := func(a controltest.Agent) bool { return a.UID == uid }

			const storm = 30
			var last []byte
			sawWaiting := false
			began := time.Now()
			for i := range storm {
				last, _ = srv.SetConfig(this, fmt.Sprintf("[accept]\nanswer_count = %d\n", 100+i))
				time.Sleep(100 * time.Millisecond)
				a, _ := srv.Agent(uid)
				if a.RemoteStatus.GetStatus() == protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLYING {
					sawWaiting = sawWaiting || regexpWaiting.MatchString(a.RemoteStatus.GetErrorMessage())
				}
			}
			stormTook := time.Since(began)
			waitStatus(t, srv, uid, last, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED)
			calls := tl.applier.calls()
			allowed := int(stormTook/every) + 2 // the first at once, one per ApplyEvery, the last after the storm
			require.LessOrEqual(t, len(calls), allowed, "%d rebuilds for %d configs in %s", len(calls), storm, stormTook)
			require.Equal(t, 100+storm-1, calls[len(calls)-1].Accept.AnswerCount, "the last config sent is the one in effect")
			require.True(t, sawWaiting, "the server was told the till waits, and until when")
		})
	}
}

// TestClientBacksOffAfterARefusedConfig: after a config the daemon
// refused (FAILED, rolled back), the same config under a new hash is not
// applied before the backoff (ApplyEvery, 2 s here): it is reported
// APPLYING "waiting until", then applied, refused again, and the next
// waits twice as long. Before, it was applied at once.
func TestClientBacksOffAfterARefusedConfig(t *testing.T) {
	t.Parallel()
	srv := controltest.Start(t)
	const every = 2 * time.Second
	tl := startTillOpts(t, srv.WSURL(), "", func(o *control.Options) { o.ApplyEvery = every })
	uid := tl.client.InstanceUID()
	agent(t, srv, uid, func(a controltest.Agent) bool { return a.Description != nil })
	this := func(a controltest.Agent) bool { return a.UID == uid }

	notReady := "[accept]\nanswer_count = 7\n" // the applier refuses it, as a daemon not ready
	hash := srv.SetConfigHash(this, notReady, []byte("first"))
	waitStatus(t, srv, uid, hash, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_FAILED)
	require.Len(t, tl.applier.calls(), 1)

	hash = srv.SetConfigHash(this, notReady, []byte("second"))
	a := waitStatus(t, srv, uid, hash, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLYING)
	require.Regexp(t, regexpWaiting, a.RemoteStatus.GetErrorMessage())
	require.Len(t, tl.applier.calls(), 1, "held, not applied")
	waitStatus(t, srv, uid, hash, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_FAILED)
	require.Len(t, tl.applier.calls(), 2)

	hash = srv.SetConfigHash(this, notReady, []byte("third"))
	waitStatus(t, srv, uid, hash, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_FAILED)
	spans := tl.applier.times()
	require.Len(t, spans, 3)
	require.GreaterOrEqual(t, spans[1][0].Sub(spans[0][1]), every, "the same config applied only after the backoff")
	require.GreaterOrEqual(t, spans[2][0].Sub(spans[1][1]), 2*every, "the backoff doubles")
}
