// Package daemon wires receiptd together: the store, the queue, the tax
// service client, the sync worker, the lookup cache, metrics and the local
// API. It is what `receiptd run` and `receiptd demo` start, and what the
// end-to-end tests start.
//
// New does everything that can refuse to start (a locked or damaged
// database, a listener that cannot be bound, a non-loopback address without
// a token) before Run starts a single goroutine, so a refusal is an error
// returned at once. Run owns every goroutine it starts and returns only
// when all of them have ended and the database is closed.
//
// # The Supervisor: a config applied in place
//
// `receiptd run` starts a Supervisor (NewManaged), not a bare Daemon. It
// runs one Daemon at a time, and Apply, which the head office's channel
// ([control]) calls with each config it accepts, swaps that Daemon for
// one built from the new config, without a restart:
//
//   - The listeners are bound once, by the first Daemon, and the
//     Supervisor holds them across every swap (handoff.go); each Daemon
//     serves a view of them. A connection made while no Daemon serves
//     waits, and the ones after it wait in the kernel's backlog, until
//     the next Daemon accepts: a POS is answered late, never refused.
//   - The old Daemon is stopped first, as at shutdown: requests in flight
//     answered, sends in flight recorded (for up to shutdown_timeout), the
//     write-ahead log and the database closed. Only then is the new one
//     built on the same data directory, so that every receipt is in
//     exactly one of them, never lost nor stored twice.
//   - The new Daemon must be Ready (running, its database the one opened
//     and writable, backup.dir usable) within control.rollback_after and
//     before Apply's context ends. When it cannot start or is not ready,
//     it is stopped and a Daemon on the previous config is started again:
//     the rollback, which is not waited for, as that config was ready.
//   - data_dir, listen and listen_unix never change in place (the files
//     and the sockets stay until a restart); the metrics, the channel and
//     the simulator probe outlive the Daemons, so counters go on.
//   - What a stopped Daemon knew and did not keep on disk goes on in the
//     next (carry: PosAPI's last /rest/info read and receiptd's last
//     sendData, the fleet push's last success), and log.level is set on
//     the running logger (FollowLogLevel).
//
// Apply returns nil once the new Daemon is ready, or at once when the
// config is the one in effect. Otherwise its error says why, and:
//
//   - the config's own error (Validate, a key that cannot change in
//     place), ErrSwapInProgress (another Apply is under way; Apply
//     refuses rather than queue behind a swap that may take minutes) and
//     ErrNotRunning (before Run, or once Run is stopping or has returned)
//     change nothing;
//   - any other error is a swap that failed: the previous config runs
//     again, unless the error says that it could not start again either.
//     Then no Daemon runs, Run returns the rollback's error (so a service
//     manager restarts receiptd), and every later Apply is ErrNotRunning.
//     A swap that Run's end cuts short is ErrNotRunning too.
//
// Only Run's goroutine starts or stops a Daemon: Apply checks the config,
// hands the swap to it and waits for the answer. What the Supervisor
// reports meanwhile (the channel's health and posNo, Config) is read
// under a lock that no swap holds across a wait, so it answers at once:
// "starting or changing its configuration" while no Daemon serves. A
// Daemon that has stopped is not kept.
//
// # The switch to a new version
//
// With EnableUpdates, the Supervisor also switches to a release that
// `receiptd update apply` staged (RequestSwitch, inside update.window;
// switch.go, with switch_linux.go and switch_windows.go). It stops its
// Daemon as a swap does. On Linux it suspends the handoffs without
// closing the listeners and starts the release as a child process that
// inherits them and the connections accepted but not served
// (RECEIPTD_LISTEN_FDS, RECEIPTD_HELD_FDS; init takes them instead of
// binding). On Windows it closes the listeners and the child binds the
// same addresses (RECEIPTD_LISTEN_ADDRS): a POS is refused in between.
// The child is on probation (RECEIPTD_PROBATION: its store never
// migrates the schema) until it has answered /readyz within
// control.rollback_after and stayed up for update.probation; then it is
// installed, and this process stays as its thin parent until it ends.
// Otherwise the child is stopped, its file recorded as rolled back, and
// a Daemon started here again on the same listeners (bound again on
// Windows): the rollback is the old version's code. Only this process
// writes update.json (package release). The child dies with this
// process, even on kill -9 or TerminateProcess (Pdeathsig; a Job Object
// on Windows), and is asked to stop by SIGTERM (on Windows, the end of
// its standard input: WithParent); docs/decisions/updates.md says why.
package daemon
