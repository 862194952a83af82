//go:build windows

package fileutil

import "syscall"

// diskFullErrnos are the errors meaning "the file cannot grow":
// ERROR_HANDLE_DISK_FULL (39) and ERROR_DISK_FULL (112).
var diskFullErrnos = []error{syscall.Errno(39), syscall.Errno(112)}
