package metrics

import "sync"

// Unwatch stops every watch (the function each Watch method sets), so
// that one *Metrics serves the daemons a Supervisor runs one after
// another: the daemon that stopped is no longer read, and the next one's
// Watch calls set their own functions. The counters the registry holds
// itself (send attempts, HTTP requests, receipts accepted, ...) go on as
// they are; the counters a watched function reports as its component's
// total since it started (log_flushes_total, backup_snapshots_total,
// send_data_total, ...) are read one last time and carried over, so none
// of them starts again from zero at a swap (the control channel's count of
// refused configs is not carried: the channel outlives the daemons; nor
// are the update's rollbacks and refusals: update.json keeps them). The
// Watch methods are the one
// declaration of what is watched: the tests find them by reflection, so a
// Watch that Unwatch forgets to stop, or whose counter it forgets to
// carry, fails them by name. Call it only once the daemon it stops
// watching has stopped; on a nil *Metrics it does nothing.
func (m *Metrics) Unwatch() {
	if m == nil {
		return
	}
	m.queue.set(nil)
	m.store.set(nil)
	m.answers.set(nil)
	m.control.set(nil)
	m.update.set(nil) // its counters are update.json's, kept for good: nothing to carry
	if f := m.log.take(); f != nil {
		flushes, records := f()
		m.log.carried.add(func(b [2]uint64) [2]uint64 { return [2]uint64{b[0] + flushes, b[1] + records} })
	}
	if f := m.backup.take(); f != nil {
		if b, ok := f(); ok {
			m.backup.carried.add(func(c [2]uint64) [2]uint64 { return [2]uint64{c[0] + b.Snapshots, c[1] + b.Failures} })
		}
	}
	if f := m.fleet.take(); f != nil {
		_, _, dropped := f()
		m.fleet.carried.add(func(c uint64) uint64 { return c + dropped })
	}
	if f := m.posapi.take(); f != nil {
		st := f()
		m.posapi.carried.add(func(c map[string][2]uint64) map[string][2]uint64 {
			out := make(map[string][2]uint64, len(c)+1)
			for k, v := range c {
				out[k] = v
			}
			b := out[st.PosAPI]
			out[st.PosAPI] = [2]uint64{b[0] + st.SendDataOK, b[1] + st.SendDataFailed}
			return out
		})
	}
}

// counters holds the totals of watched counters carried over from the
// daemons before (Unwatch); the zero value is zero.
type counters[T any] struct {
	mu sync.Mutex
	v  T
}

func (c *counters[T]) get() T {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.v
}

func (c *counters[T]) add(f func(T) T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.v = f(c.v)
}
