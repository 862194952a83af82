package syncer_test

import (
	"context"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/syncer"
)

// Run returns only when nothing of the worker is left: with a context
// already cancelled at start, the shutdown deadline's timer must not be
// armed after Run disarmed it, to fire later and log a shutdown timeout
// for a worker long gone. Any log line written after Run returned counts.
func TestNothingOutlivesRunOnImmediateStop(t *testing.T) {
	t.Parallel()
	r := newRig(t, fastConfig(), sim.Options{Seed: 19})
	cfg := fastConfig()
	// A deadline this short often fires while Run is still tidying up
	// (which is fine: Run waits for it) and, were a timer armed after the
	// disarm, fires soon after Run returned.
	cfg.ShutdownTimeout = time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	const cycles = 2000
	var late atomic.Int64 // log lines written after their Run returned
	var lateMsg atomic.Value
	for range cycles {
		var returned atomic.Bool
		core := zapcore.RegisterHooks(
			zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(io.Discard), zap.DebugLevel),
			func(e zapcore.Entry) error {
				if returned.Load() {
					late.Add(1)
					lateMsg.Store(e.Message)
				}
				return nil
			})
		w := syncer.New(r.q, r.c, cfg, zap.New(core), nil)
		w.Run(ctx)
		returned.Store(true)
	}
	time.Sleep(50 * time.Millisecond) // longer than any deadline armed by then
	require.Zero(t, late.Load(), "a worker logged after Run returned: %v", lateMsg.Load())
}
