//go:build !windows

package api

import "os"

// restrictSocket lets only the socket's owner and group connect.
func restrictSocket(path string) error { return os.Chmod(path, 0o660) }
