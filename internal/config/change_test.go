package config

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEveryKeyDecidesHowItChanges: a key added to Config without a
// change tag (or with a misspelt one) fails here, before RestartChanges
// or NeverRemote read it as "restart". A table carries none: its keys
// decide one by one.
func TestEveryKeyDecidesHowItChanges(t *testing.T) {
	t.Parallel()
	root := reflect.TypeFor[Config]()
	for _, f := range keyFields {
		tag, has := root.FieldByIndex(f.index).Tag.Lookup("change")
		if f.table {
			require.False(t, has, "%s is a table: put change tags on its keys", f.key)
			continue
		}
		require.Contains(t, []string{changeRestart, changeLocal, changeRemote, changeNamed}, tag,
			"%s: tag its field change:\"restart\" (only a restart changes it), \"local\" (in place, never remotely), \"named\" (remotely only where the till's own control.allow names the key) or \"remote\"", f.key)
	}
}

// TestNeverRemoteFromTags pins what the tags say today: a head office
// may not move the listeners or the data, nor touch [auth] or [control],
// nor choose the log file (opened once, where the service may write
// anything) or its format and rotation, nor choose the keys a release is
// signed by or let an older one run.
func TestNeverRemoteFromTags(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"listen", "listen_unix", "data_dir", "auth",
		"log.file", "log.format", "log.max_size_mb", "log.max_files", "control",
		"update.trusted_keys", "update.allow_downgrade"}, NeverRemote)
	for _, key := range leafKeys() {
		require.Equal(t, neverRemote(key) != "", !isRemote(key), key)
	}
}

// TestNamedRemoteFromTags pins the keys a head office may set only where
// the till's own control.allow names them (issue 38): where data goes or
// what is read, how a sale is answered, the till's own sendData.
func TestNamedRemoteFromTags(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"accept.wait", "accept.max_wait", "accept.timezone", "accept.queued_answer",
		"backup.dir", "fleet.remote_write_url", "fleet.headers", "fleet.ca_file", "fleet.proxy",
		"posapi.auto_send_data"}, NamedRemote)
}

func isRemote(key string) bool {
	for _, f := range keyFields {
		if f.key == key {
			return f.changes() == changeRemote || f.changes() == changeNamed
		}
	}
	return false
}

// TestRestartChanges: a change to a change:"restart" key is refused
// naming it, with both values; any other key may change in place.
func TestRestartChanges(t *testing.T) {
	t.Parallel()
	old := Default()
	old.DataDir = "/var/lib/a"
	cfg := old
	cfg.DataDir = "/var/lib/b"
	require.EqualError(t, RestartChanges(old, cfg),
		`data_dir: cannot change while receiptd runs (from "/var/lib/a" to "/var/lib/b"); change it in the till's own file and restart receiptd`)
	cfg = old
	cfg.ListenUnix = "/run/receiptd.sock"
	require.ErrorContains(t, RestartChanges(old, cfg), `listen_unix: cannot change while receiptd runs (from "" to "/run/receiptd.sock")`)

	cfg = old
	cfg.Listen = "127.0.0.1:7090"
	cfg.Auth.Token = NewSecret("another-token-0123456789")
	cfg.Sync.Concurrency = 5
	cfg.Control.OpAMPURL = "wss://hq.example/v1/opamp"
	require.ErrorContains(t, RestartChanges(old, cfg), "listen: ")
	cfg.Listen = old.Listen
	require.NoError(t, RestartChanges(old, cfg), "local and remote keys change in place")
}
