// Package release keeps the releases a till has taken and the update's
// state, in the data directory (layout.Versions, layout.UpdateFile): Stage
// copies a release file into versions/ only when update.Policy passes
// the very bytes copied, and State is what update.json holds, written
// whole (fileutil.WriteFileAtomic) at every step, so that a start after a
// power cut knows whether the release being tried had passed its
// probation.
//
// Only the version that was running when a release was offered writes
// the state of that release: the new version, on probation, never
// records its own success (package daemon's switch does, in the parent
// process). A release rolled back is remembered for good
// (State.RolledBack): update.Policy refuses its file for ever after.
package release
