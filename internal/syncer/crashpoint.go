//go:build !receiptd_crashpoints_unsafe

package syncer

// crashPoint marks a moment of a send at which the crash test
// (internal/testing/soak's TestKillAroundTheOutcome) kills receiptd. It
// does nothing unless the binary is built with the build tag
// receiptd_crashpoints_unsafe (crashpoint_unsafe.go), which no release is.
func crashPoint(string) {}
