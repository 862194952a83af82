package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// rawFsync is the reference for accept latency: one small durable write on
// the disk the daemon's data is on, measured two ways.
type rawFsync struct {
	bolt, file sample
}

// measureFsync times n bbolt Updates of one 32-byte value, and n 32-byte
// os.File writes each followed by Sync, in dir.
func measureFsync(dir string, n int) (rawFsync, error) {
	var r rawFsync
	db, err := bolt.Open(filepath.Join(dir, "ref.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return r, fmt.Errorf("fsync reference: open bbolt: %w", err)
	}
	defer db.Close()
	val := make([]byte, 32)
	for i := range n {
		t0 := time.Now()
		err := db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("ref"))
			if err != nil {
				return err
			}
			return b.Put(fmt.Appendf(nil, "%08d", i), val)
		})
		if err != nil {
			return r, fmt.Errorf("fsync reference: bbolt update: %w", err)
		}
		r.bolt = append(r.bolt, time.Since(t0))
	}
	f, err := os.OpenFile(filepath.Join(dir, "ref.bin"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return r, fmt.Errorf("fsync reference: %w", err)
	}
	defer f.Close()
	for range n {
		t0 := time.Now()
		if _, err := f.Write(val); err != nil {
			return r, fmt.Errorf("fsync reference: write: %w", err)
		}
		if err := f.Sync(); err != nil {
			return r, fmt.Errorf("fsync reference: sync: %w", err)
		}
		r.file = append(r.file, time.Since(t0))
	}
	return r, nil
}
