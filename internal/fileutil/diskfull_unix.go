//go:build unix

package fileutil

import "syscall"

// diskFullErrnos are the errors meaning "the file cannot grow".
var diskFullErrnos = []error{syscall.ENOSPC, syscall.EFBIG, syscall.EDQUOT}
