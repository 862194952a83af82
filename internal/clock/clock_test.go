package clock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/clock"
)

func TestSleep(t *testing.T) {
	t.Parallel()
	require.True(t, clock.Sleep(context.Background(), time.Millisecond), "the time passed")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.False(t, clock.Sleep(ctx, time.Hour), "a context already ended ends the sleep at once")

	ctx, cancel = context.WithCancel(context.Background())
	done := make(chan bool)
	go func() { done <- clock.Sleep(ctx, time.Hour) }()
	cancel()
	require.False(t, <-done, "a context ended during the sleep ends it")
}

func TestWait(t *testing.T) {
	t.Parallel()
	wake := make(chan struct{}, 1)
	wake <- struct{}{}
	start := time.Now()
	require.True(t, clock.Wait(context.Background(), time.Hour, wake), "a wake-up ends the wait")
	require.Less(t, time.Since(start), time.Hour)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.False(t, clock.Wait(ctx, time.Hour, make(chan struct{})), "an ended context ends it, false")
	require.True(t, clock.Wait(context.Background(), time.Millisecond, nil), "the time passed")
}
