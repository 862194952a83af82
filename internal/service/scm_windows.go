package service

import (
	"fmt"
	"os"
	"strings"
	"unsafe"

	kservice "github.com/kardianos/service"
	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/eventlog"
)

// startedBySCM reports whether the service control manager started this
// process: its parent is services.exe. kardianos/service asks
// svc.IsWindowsService, which also wants the parent in session 0; Wine
// runs services.exe in session 1, so there kardianos takes a service for
// an interactive program, never answers the SCM, and the start fails with
// "Service request timeout" (see packaging/README.md, Windows under Wine).
func startedBySCM() bool {
	if ok, err := svc.IsWindowsService(); err == nil && ok {
		return true
	}
	name, err := parentImage()
	return err == nil && strings.EqualFold(name, "services.exe")
}

// parentImage is the image name of the process that started this one.
func parentImage() (string, error) {
	var pbi windows.PROCESS_BASIC_INFORMATION
	size := uint32(unsafe.Sizeof(pbi))
	if err := windows.NtQueryInformationProcess(windows.CurrentProcess(), windows.ProcessBasicInformation,
		unsafe.Pointer(&pbi), size, &size); err != nil {
		return "", fmt.Errorf("query this process: %w", err)
	}
	buf := make([]byte, 256<<10)
	for {
		err := windows.NtQuerySystemInformation(windows.SystemProcessInformation, unsafe.Pointer(&buf[0]), uint32(len(buf)), &size)
		if err == nil {
			break
		}
		if err != windows.STATUS_INFO_LENGTH_MISMATCH || len(buf) >= 64<<20 {
			return "", fmt.Errorf("list processes: %w", err)
		}
		buf = make([]byte, 2*len(buf))
	}
	for off := uintptr(0); ; {
		p := (*windows.SYSTEM_PROCESS_INFORMATION)(unsafe.Pointer(&buf[off]))
		if p.UniqueProcessID == pbi.InheritedFromUniqueProcessId {
			return p.ImageName.String(), nil
		}
		if p.NextEntryOffset == 0 {
			return "", fmt.Errorf("parent process %d: %w", pbi.InheritedFromUniqueProcessId, os.ErrNotExist)
		}
		off += uintptr(p.NextEntryOffset)
	}
}

// runService answers the SCM: through kardianos/service where it knows it
// is a service, else (Wine) with svc.Run and the same Start and Stop.
func runService(s kservice.Service, p *program) error {
	if !kservice.Interactive() {
		return s.Run()
	}
	var failed error
	err := svc.Run(Name, scmHandler{s: s, p: p, failed: &failed})
	if failed != nil {
		return failed
	}
	return err
}

// scmHandler is kardianos/service's Execute for program: start pending,
// running, then stop (or shutdown) pending until Stop returns.
type scmHandler struct {
	s      kservice.Service
	p      *program
	failed *error
}

func (h scmHandler) Execute(_ []string, r <-chan svc.ChangeRequest, changes chan<- svc.Status) (bool, uint32) {
	changes <- svc.Status{State: svc.StartPending}
	if err := h.p.Start(h.s); err != nil {
		*h.failed = err
		return true, 1
	}
	changes <- svc.Status{State: svc.Running, Accepts: svc.AcceptStop | svc.AcceptShutdown}
	for c := range r {
		switch c.Cmd {
		case svc.Interrogate:
			changes <- c.CurrentStatus
		case svc.Stop, svc.Shutdown:
			changes <- svc.Status{State: svc.StopPending}
			if err := h.p.Stop(h.s); err != nil {
				*h.failed = err
				return true, 2
			}
			return false, 0
		}
	}
	return false, 0
}

// eventLogger writes to the Application log under the source "receiptd"
// (registered by install and by the MSI). kardianos's own logger writes
// there only when it knows it is a service (see startedBySCM).
func eventLogger(s kservice.Service) (kservice.Logger, error) {
	if !kservice.Interactive() {
		return s.Logger(nil)
	}
	l, err := eventlog.Open(Name)
	if err != nil {
		return nil, fmt.Errorf("open event log source %s: %w", Name, err)
	}
	return winEventLog{l}, nil
}

// winEventLog is kardianos's WindowsLogger over an event log of our own.
type winEventLog struct{ l *eventlog.Log }

func (w winEventLog) Error(v ...any) error              { return w.l.Error(3, fmt.Sprint(v...)) }
func (w winEventLog) Warning(v ...any) error            { return w.l.Warning(2, fmt.Sprint(v...)) }
func (w winEventLog) Info(v ...any) error               { return w.l.Info(1, fmt.Sprint(v...)) }
func (w winEventLog) Errorf(f string, a ...any) error   { return w.l.Error(3, fmt.Sprintf(f, a...)) }
func (w winEventLog) Warningf(f string, a ...any) error { return w.l.Warning(2, fmt.Sprintf(f, a...)) }
func (w winEventLog) Infof(f string, a ...any) error    { return w.l.Info(1, fmt.Sprintf(f, a...)) }
