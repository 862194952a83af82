// Package control owns the till's side of the management channel to a
// head office over OpAMP ([control], docs/contract.md "Managing the
// fleet"): the instance UID, the OpAMP client (WebSocket or HTTP polling,
// from github.com/open-telemetry/opamp-go), the agent description, health
// and effective configuration it reports, and the remote configuration
// fragments it receives, checks (config.Merge), hands to the daemon's
// Applier, and keeps on disk.
//
// It promises that:
//   - the instance UID is a UUIDv7 created once and kept in
//     <data_dir>/control, so restarts, upgrades and restores onto the same
//     till keep it;
//   - a fragment that does not merge is never handed to the Applier; it is
//     reported FAILED with config check's messages, and the till runs on;
//   - the last fragment the Applier accepted is on disk (written to a
//     temporary file, fsynced, renamed, the directory fsynced) before it
//     is reported APPLIED, and StartConfig starts from it, so a till starts
//     the same while the head office is unreachable;
//   - the effective configuration it reports carries no secret: tokens,
//     header values and proxy passwords are "(set)";
//   - a message from the server over MaxMessage is refused before it is
//     read whole, over either transport (a patched opamp-go:
//     third_party/opamp-go); connections open within ConnectTimeout,
//     through control.proxy or the environment's, and follow no redirect
//     (transport.go);
//   - a config that changes the daemon is applied at most once every
//     ApplyEvery, and after one the daemon refused waits a backoff
//     doubling up to MaxApplyBackoff, reported APPLYING "waiting until"
//     meanwhile (gate.go);
//   - one goroutine applies fragments, one at a time, the newest first;
//     Run owns every goroutine and returns only when they have stopped.
package control
