//go:build !linux

package harness

import "fmt"

// RSS is only measured on Linux (/proc/PID/status); elsewhere it is
// ErrUnsupported.
func (p *Process) RSS() (int64, error) {
	return 0, fmt.Errorf("rss of %d: %w", p.PID, ErrUnsupported)
}
