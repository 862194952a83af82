//go:build unix

package store

import "syscall"

// diskFullErrnos are the errors meaning "the file cannot grow".
var diskFullErrnos = []error{syscall.ENOSPC, syscall.EFBIG, syscall.EDQUOT}
