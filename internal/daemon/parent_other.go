//go:build !windows

package daemon

import "context"

// WithParent is ctx: off Windows a parent asks its child to stop with
// SIGTERM, which `receiptd run` stops on already (switch_windows.go has
// the Windows way).
func WithParent(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithCancel(ctx)
}
