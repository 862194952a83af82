package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// Packages whose symbols are the cost of each head-office feature in the
// binary: the OpAMP client ([control], issue 31) and the metrics push
// ([fleet]), each with the libraries only it brings.
var (
	controlPackages = []string{"github.com/receiptd/receiptd/internal/control.", "github.com/open-telemetry/opamp-go/",
		"github.com/gorilla/websocket.", "github.com/google/uuid."}
	fleetPackages = []string{"github.com/receiptd/receiptd/internal/fleet.", "github.com/klauspost/compress/"}
)

// symbolBytes is the size of the binary's file and of the symbols of the
// packages named by prefixes, as `go tool nm -size` lists them: a lower
// bound on what those packages cost, since the type, pclntab and string
// data beside their symbols are not counted.
func symbolBytes(bin string, prefixes []string) (file, part int64, err error) {
	st, err := os.Stat(bin)
	if err != nil {
		return 0, 0, err
	}
	out, err := exec.Command("go", "tool", "nm", "-size", bin).Output()
	if err != nil {
		return 0, 0, fmt.Errorf("go tool nm %s: %w", bin, err)
	}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line) // address size type name
		if len(f) < 4 {
			continue
		}
		size, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		for _, p := range prefixes {
			if strings.HasPrefix(f[3], p) {
				part += size
				break
			}
		}
	}
	return st.Size(), part, nil
}

// binaryReport is the binary-size line of the control step, beside the
// fleet push's.
func binaryReport(bin string) (string, error) {
	file, ctl, err := symbolBytes(bin, controlPackages)
	if err != nil {
		return "", err
	}
	_, fleet, err := symbolBytes(bin, fleetPackages)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("- binary (go tool nm -size, symbols only, a lower bound): the OpAMP client's packages %d bytes (%.1f%% of the %d-byte file), the fleet push's %d bytes (%.1f%%)\n",
		ctl, 100*float64(ctl)/float64(file), file, fleet, 100*float64(fleet)/float64(file)), nil
}
