package metrics

import "sync"

// watched holds the function a collector calls on every scrape, which its
// Watch method may replace while scrapes run.
type watched[F any] struct {
	mu sync.Mutex
	f  F
}

func (w *watched[F]) set(f F) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.f = f
}

func (w *watched[F]) get() F {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.f
}

// take returns the function and stops watching it.
func (w *watched[F]) take() F {
	w.mu.Lock()
	defer w.mu.Unlock()
	f := w.f
	var zero F
	w.f = zero
	return f
}
