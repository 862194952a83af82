package testkit

import (
	"sync"
	"time"
)

// ManualClock is a clock the test moves (Add) and the code under test
// reads (Now) from other goroutines: the wall clock a PosAPI watcher, the
// simulator's shared PosAPI or the lookup cache is given.
type ManualClock struct {
	mu sync.Mutex
	t  time.Time
}

// NewManualClock returns a ManualClock that reads t until moved.
func NewManualClock(t time.Time) *ManualClock { return &ManualClock{t: t} }

// Now is the clock's time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Add moves the clock by d (backwards when d is negative).
func (c *ManualClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}
