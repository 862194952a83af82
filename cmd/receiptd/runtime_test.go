package main

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTuneRuntime: one P, GOGC=400 and a 64 MiB soft limit unless the
// environment says otherwise, which then wins.
func TestTuneRuntime(t *testing.T) {
	procs, gc, limit := runtime.GOMAXPROCS(0), debug.SetGCPercent(100), debug.SetMemoryLimit(-1)
	t.Cleanup(func() {
		runtime.GOMAXPROCS(procs)
		debug.SetGCPercent(gc)
		debug.SetMemoryLimit(limit)
	})
	for _, env := range []string{"GOMAXPROCS", "GOGC", "GOMEMLIMIT"} {
		t.Setenv(env, "")
	}
	runtime.GOMAXPROCS(3)
	tuneRuntime()
	require.Equal(t, 1, runtime.GOMAXPROCS(0))
	require.Equal(t, 400, debug.SetGCPercent(400))
	require.Equal(t, int64(64<<20), debug.SetMemoryLimit(-1))

	t.Setenv("GOMAXPROCS", "3")
	t.Setenv("GOGC", "100")
	t.Setenv("GOMEMLIMIT", "1GiB")
	runtime.GOMAXPROCS(3)
	debug.SetGCPercent(100)
	debug.SetMemoryLimit(1 << 30)
	tuneRuntime()
	require.Equal(t, 3, runtime.GOMAXPROCS(0), "GOMAXPROCS in the environment wins")
	require.Equal(t, 100, debug.SetGCPercent(100), "GOGC in the environment wins")
	require.Equal(t, int64(1<<30), debug.SetMemoryLimit(-1), "GOMEMLIMIT in the environment wins")
}
