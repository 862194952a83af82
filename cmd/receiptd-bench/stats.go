package main

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

// settle is the pause after each measured window of the floor and online
// steps, before the next server's: what a server does once its load stops
// falls in no other server's window, and the floor step counts its CPU to
// the server that spent it. receiptd's is the commit of its log once the
// till is quiet (queue.Options.ApplyDelay, 50 ms, seen within two): the
// window's last records, less than a commit of 1,024 (27 to 30 ms on this
// machine's disk), the others applied during the window.
const settle = 500 * time.Millisecond

// sample is a set of measured durations.
type sample []time.Duration

// pct returns the p-th percentile (0 < p ≤ 100), nearest rank.
func (s sample) pct(p float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	c := slices.Clone(s)
	slices.Sort(c)
	i := int(float64(len(c))*p/100+0.5) - 1
	return c[max(0, min(i, len(c)-1))]
}

func (s sample) p50() time.Duration { return s.pct(50) }
func (s sample) p99() time.Duration { return s.pct(99) }

// ms formats d in milliseconds with enough digits for sub-millisecond values.
func ms(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	switch {
	case v < 1:
		return fmt.Sprintf("%.3fms", v)
	case v < 100:
		return fmt.Sprintf("%.2fms", v)
	}
	return fmt.Sprintf("%.0fms", v)
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "MISS"
}

// loadAvg is /proc/loadavg's first three fields, or "n/a" off Linux.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "n/a (" + runtime.GOOS + ")"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "n/a"
	}
	return strings.Join(f[:3], " ")
}

// row is one line of the result table.
type row struct {
	figure, measured, reference, target, result string
}

func printTable(rows []row) {
	w := [5]int{}
	head := row{"figure", "measured", "reference (same run)", "target", "result"}
	all := append([]row{head}, rows...)
	for _, r := range all {
		for i, c := range []string{r.figure, r.measured, r.reference, r.target, r.result} {
			w[i] = max(w[i], len(c))
		}
	}
	for i, r := range all {
		fmt.Printf("%-*s | %-*s | %-*s | %-*s | %s\n", w[0], r.figure, w[1], r.measured, w[2], r.reference, w[3], r.target, r.result)
		if i == 0 {
			fmt.Println(strings.Repeat("-", w[0]+w[1]+w[2]+w[3]+w[4]+12))
		}
	}
}
