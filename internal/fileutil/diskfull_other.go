//go:build !unix && !windows

package fileutil

import "errors"

// diskFullErrnos: platforms without errno values match on the message.
var diskFullErrnos = []error{errors.New("no space left on device")}
