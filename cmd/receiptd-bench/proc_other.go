//go:build !linux

package main

import (
	"errors"
	"os"
	"runtime"
	"time"
)

// errNoProc: the figures read from /proc are measured on Linux only.
var errNoProc = errors.New("measured from /proc, on Linux only (this is " + runtime.GOOS + ")")

type memory struct{ anon, file int64 }

func procCPU(int) (time.Duration, error)     { return 0, errNoProc }
func procRunTime(int) (time.Duration, error) { return 0, errNoProc }
func procMemory(int) (memory, error)         { return memory{}, errNoProc }
func procSwitches(int) (int64, error)        { return 0, errNoProc }
func diskBytes(path string) (int64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}
func fdatasync(f *os.File) error { return f.Sync() }
