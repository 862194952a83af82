//go:build !windows

package main

// prepareWindows: nothing to do outside Windows (see prepareLinux).
func prepareWindows(*cmdEnv, loadedConfig) error { return nil }
