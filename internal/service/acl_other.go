//go:build !windows

package service

import "io"

// prepareWindows: nothing to do outside Windows (see prepareLinux).
func prepareWindows(io.Writer, Definition) error { return nil }
