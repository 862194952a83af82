package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTick is the unit of utime and stime in /proc/PID/stat: USER_HZ,
// which Linux fixes at 100 for every program that reads /proc.
const clockTick = 10 * time.Millisecond

// procCPU is the user plus system CPU time the process has used
// (/proc/PID/stat fields 14 and 15).
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("cpu of %d: %w", pid, err)
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("cpu of %d: no ')' in /proc/%d/stat", pid, pid)
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3
	if len(f) < 13 {
		return 0, fmt.Errorf("cpu of %d: short /proc/%d/stat", pid, pid)
	}
	var ticks int64
	for _, s := range f[11:13] { // fields 14 utime and 15 stime
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("cpu of %d: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick, nil
}

// procRunTime is the time the process's threads have run on a CPU, in
// nanoseconds, summed over /proc/PID/task/*/schedstat (its first field):
// precise where utime and stime count 10 ms ticks, which an idle daemon
// uses less than one of in a minute. Threads that ended are not counted.
func procRunTime(pid int) (time.Duration, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		return 0, fmt.Errorf("run time of %d: no tasks (%v)", pid, err)
	}
	var sum int64
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if os.IsNotExist(err) {
			continue // the thread ended meanwhile
		}
		if err != nil {
			return 0, fmt.Errorf("run time of %d: %w", pid, err)
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return 0, fmt.Errorf("run time of %d: empty %s", pid, t)
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("run time of %d: %w", pid, err)
		}
		sum += ns
	}
	return time.Duration(sum), nil
}

// statusFields returns the kB values of the named lines of a
// /proc/.../status file, in bytes (or counts, for lines without a unit).
func statusFields(path string, names ...string) (map[string]int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(names))
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		for _, want := range names {
			if name != want {
				continue
			}
			f := strings.Fields(rest)
			if len(f) == 0 {
				return nil, fmt.Errorf("%s: empty %s line", path, name)
			}
			n, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", path, name, err)
			}
			if len(f) == 2 && f[1] == "kB" {
				n *= 1024
			}
			out[name] = n
		}
	}
	for _, want := range names {
		if _, ok := out[want]; !ok {
			return nil, fmt.Errorf("%s: no %s line", path, want)
		}
	}
	return out, nil
}

// memory is a process's resident memory split as the kernel counts it.
type memory struct {
	anon int64 // RssAnon: private memory (heap, stacks)
	file int64 // RssFile: pages of mapped files (the database) in memory
}

func procMemory(pid int) (memory, error) {
	m, err := statusFields(fmt.Sprintf("/proc/%d/status", pid), "RssAnon", "RssFile")
	if err != nil {
		return memory{}, fmt.Errorf("memory of %d: %w", pid, err)
	}
	return memory{anon: m["RssAnon"], file: m["RssFile"]}, nil
}

// procSwitches is the number of times the process's threads have been
// switched out, voluntarily (they slept: a timer, a read) or not, summed
// over /proc/PID/task/*/status. Each wake-up of an idle daemon costs at
// least one. Threads that ended are not counted (an idle Go program keeps
// its threads).
func procSwitches(pid int) (int64, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	if err != nil || len(tasks) == 0 {
		return 0, fmt.Errorf("context switches of %d: no tasks (%v)", pid, err)
	}
	var sum int64
	for _, t := range tasks {
		m, err := statusFields(t, "voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")
		if err != nil {
			if os.IsNotExist(err) {
				continue // the thread ended meanwhile
			}
			return 0, fmt.Errorf("context switches of %d: %w", pid, err)
		}
		sum += m["voluntary_ctxt_switches"] + m["nonvoluntary_ctxt_switches"]
	}
	return sum, nil
}

// diskBytes is the space the file takes on disk (its allocated blocks):
// bbolt grows its file with a truncate, which allocates nothing until
// pages are written.
func diskBytes(path string) (int64, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return 0, fmt.Errorf("stat %s: %w", path, err)
	}
	return st.Blocks * 512, nil
}

// fdatasync flushes f's data (and its size) but not its other metadata.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
