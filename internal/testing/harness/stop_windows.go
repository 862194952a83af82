package harness

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"sync"

	"golang.org/x/sys/windows"
)

var (
	kernel32         = windows.NewLazySystemDLL("kernel32.dll")
	getConsoleWindow = kernel32.NewProc("GetConsoleWindow")
	freeConsole      = kernel32.NewProc("FreeConsole")
	allocConsole     = kernel32.NewProc("AllocConsole")

	consoleOnce sync.Once
	consoleErr  error
)

// PrepareStop prepares cmd so that AskToStop reaches it: Windows has no
// SIGTERM, only console control events, which reach the processes attached
// to the sender's console. So the calling process gets a console of its
// own when it has no console window (a process run without a terminal, as
// Wine runs CI's tests: there GenerateConsoleCtrlEvent fails with "Invalid
// access"), and the child shares it. The caller ignores Ctrl-C from then on
// (it receives its own events); its children are stopped by AskToStop.
func PrepareStop(*exec.Cmd) {
	consoleOnce.Do(func() {
		signal.Notify(make(chan os.Signal, 1), os.Interrupt)
		if w, _, _ := getConsoleWindow.Call(); w != 0 {
			return
		}
		_, _, _ = freeConsole.Call()
		if ok, _, err := allocConsole.Call(); ok == 0 {
			consoleErr = fmt.Errorf("allocate a console: %w", err)
		}
	})
}

// AskToStop sends CTRL_C_EVENT to every process on this console, which Go's
// runtime delivers as os.Interrupt and `receiptd run` stops on. CTRL_C to
// process group 0 is used because Wine delivers neither CTRL_BREAK_EVENT
// nor an event for a CREATE_NEW_PROCESS_GROUP group to a child (tried
// under Wine 10: the child never sees it); a caller must therefore have
// only one daemon running when it asks one to stop.
func AskToStop(*os.Process) error {
	if consoleErr != nil {
		return consoleErr
	}
	return windows.GenerateConsoleCtrlEvent(windows.CTRL_C_EVENT, 0)
}
