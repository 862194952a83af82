package syncer

import "time"

// Clock is the worker's one source of time, with the two readings a till
// has: Wall, the clock an operator or NTP may set back or forward, is what
// is compared with times on disk (claims, next attempt times, attempt
// times, acceptance times); Steady, which no such change moves, runs the
// in-memory waits, pauses and lifetimes and the age of an unsent entry
// once the worker has seen it (UnsentAge), so a corrected clock neither
// stretches nor cuts them. Tests that change the wall clock keep Steady
// real.
type Clock interface {
	Wall() time.Time
	Steady() time.Time
}

// SystemClock is the machine's clock: both readings are time.Now, whose
// monotonic reading Go uses for every difference of two steady readings.
type SystemClock struct{}

// Wall returns time.Now().
func (SystemClock) Wall() time.Time { return time.Now() }

// Steady returns time.Now().
func (SystemClock) Steady() time.Time { return time.Now() }

// now is the steady reading; wall the wall reading.
func (w *Worker) now() time.Time  { return w.clock.Steady() }
func (w *Worker) wall() time.Time { return w.clock.Wall() }
