//go:build !receiptd_nodirsync_unsafe

package fileutil

// UnsafeNoDirSync is false in every real build: SyncDir fsyncs. Only a
// binary built with the tag receiptd_nodirsync_unsafe skips directory
// fsyncs, for the power-cut test's second negative control
// (internal/testing/powercut); no setting can change it.
const UnsafeNoDirSync = false
