package harness

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// RSS returns the process's resident set size in bytes (VmRSS in
// /proc/PID/status).
func (p *Process) RSS() (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.PID))
	if err != nil {
		return 0, fmt.Errorf("rss of %d: %w", p.PID, err)
	}
	return parseVmRSS(b)
}

// parseVmRSS reads the "VmRSS:   1234 kB" line of /proc/PID/status.
func parseVmRSS(status []byte) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("rss: unexpected VmRSS line %q", sc.Text())
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || kb < 0 || kb > math.MaxInt64/1024 {
			return 0, fmt.Errorf("rss: unexpected VmRSS value %q", f[0])
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("rss: no VmRSS line (kernel thread or exited process)")
}
