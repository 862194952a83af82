//go:build receiptd_nosync_unsafe

package fileutil

// UnsafeNoSync is true in this build (tag receiptd_nosync_unsafe): bbolt
// commits are not fsynced, so a power cut loses acknowledged receipts. It
// exists only so the power-cut test can prove it catches that; never ship
// such a binary.
const UnsafeNoSync = true
