package wal_test

import (
	"context"
	"fmt"
	"os"

	"github.com/receiptd/receiptd/internal/wal"
)

// A record is durable once Sync of its LSN returns nil; Open gives back
// every durable record after the mark the caller passes (the newest record
// it has applied elsewhere), in order, and appends continue after them.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "receiptd-wal-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	const logID = 42 // the id of the database the log belongs to

	l, records, err := wal.Open(dir, logID, 0, wal.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("records at first open:", len(records))
	var last uint64
	for _, data := range []string{"first", "second", "third"} {
		if last, err = l.Append([]byte(data)); err != nil {
			fmt.Println(err)
			return
		}
	}
	if err := l.Sync(context.Background(), last); err != nil {
		fmt.Println(err)
		return
	}
	if err := l.Close(); err != nil {
		fmt.Println(err)
		return
	}

	// Reopened after record 1 was applied elsewhere: the rest come back.
	l, records, err = wal.Open(dir, logID, 1, wal.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()
	for _, r := range records {
		fmt.Println(r.LSN, string(r.Data))
	}
	next, err := l.Append([]byte("fourth"))
	fmt.Println("next:", next, err)
	// Output:
	// records at first open: 0
	// 2 second
	// 3 third
	// next: 4 <nil>
}

// Appends do not wait for the disk; one Sync makes every record up to its
// LSN durable with one flush (and concurrent Syncs share it: group
// commit).
func ExampleLog_Sync() {
	dir, err := os.MkdirTemp("", "receiptd-wal-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	l, _, err := wal.Open(dir, 42, 0, wal.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()

	var last uint64
	for i := 0; i < 10; i++ {
		if last, err = l.Append([]byte(fmt.Sprintf("record %d", i))); err != nil {
			fmt.Println(err)
			return
		}
	}
	fmt.Println("durable before Sync:", l.Durable())
	if err := l.Sync(context.Background(), last); err != nil {
		fmt.Println(err)
		return
	}
	st := l.Stats()
	fmt.Println("durable after Sync:", l.Durable(), "records:", st.Records, "flushes:", st.Flushes)
	// Output:
	// durable before Sync: 0
	// durable after Sync: 10 records: 10 flushes: 1
}
