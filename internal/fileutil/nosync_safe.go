//go:build !receiptd_nosync_unsafe

package fileutil

// UnsafeNoSync is false in every real build: commits are fsynced. Only a
// binary built with the tag receiptd_nosync_unsafe opens bbolt with NoSync
// (and skips the write-ahead log's flushes, package wal), for the
// power-cut test's negative control (internal/testing/powercut); no
// configuration key or environment variable can change it.
const UnsafeNoSync = false
