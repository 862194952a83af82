//go:build receiptd_nodirsync_unsafe

package fileutil

// UnsafeNoDirSync is true in this build (tag receiptd_nodirsync_unsafe):
// SyncDir does nothing, so a power cut soon after the first start can take
// the new database's name away. Never ship such a binary.
const UnsafeNoDirSync = true
