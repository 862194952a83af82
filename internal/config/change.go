package config

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// How a key may change is declared once, on its field of Config, by the
// struct tag change:"...": every leaf key carries one
// (TestEveryKeyDecidesHowItChanges), and what the Supervisor refuses in
// place (RestartChanges), what a head office may never set (NeverRemote)
// and what it may set only where the till's own file names the key
// (NamedRemote) are read from it.
const (
	// changeRestart: only a restart changes it (the listeners are bound
	// once, the data directory holds the instance's own files). Never set
	// remotely either.
	changeRestart = "restart"
	// changeLocal: applied in place, but from the till's own file only; a
	// head office can never set it (who may call the till, the channel
	// itself).
	changeLocal = "local"
	// changeRemote: applied in place; a head office may set it where
	// control.allow lets it.
	changeRemote = "remote"
	// changeNamed: applied in place; a head office may set it only when
	// control.allow of the till's own file names the key itself, not its
	// section: where the till's data goes or what it reads (backup.dir,
	// the push's address, proxy, CA and headers), how a sale is answered
	// (accept.wait, max_wait, queued_answer, timezone), and whether the
	// till sends its own data to the tax service (posapi.auto_send_data).
	// The default allow lists sections only, so by default never.
	changeNamed = "named"
)

// keyField is one key of the configuration, a table or a leaf.
type keyField struct {
	key   string // dotted, as Validate names it
	index []int  // from Config, for FieldByIndex
	table bool
	// change is a leaf's change tag as written; "" for a table.
	change string
}

// keyFields is every key of Config, in the order of its fields, each
// table before the keys below it.
var keyFields = listFields(reflect.TypeFor[Config](), "", nil)

func listFields(t reflect.Type, prefix string, index []int) []keyField {
	var out []keyField
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := tomlName(sf)
		if tag == "" || tag == "-" {
			continue
		}
		f := keyField{key: prefix + tag, index: append(slices.Clip(index), i), table: isTable(sf.Type)}
		if f.table {
			out = append(out, f)
			out = append(out, listFields(sf.Type, f.key+".", f.index)...)
			continue
		}
		f.change = sf.Tag.Get("change")
		out = append(out, f)
	}
	return out
}

// leafKeys lists the dotted key of every field that is not a table of
// Config's own (maps count as leaves: tables of free names).
func leafKeys() []string {
	var keys []string
	for _, f := range keyFields {
		if !f.table {
			keys = append(keys, f.key)
		}
	}
	return keys
}

// changes is how the leaf may change; a tag missing or misspelt reads as
// changeRestart, the most careful (and fails the test).
func (f keyField) changes() string {
	switch f.change {
	case changeLocal, changeRemote, changeNamed:
		return f.change
	}
	return changeRestart
}

// under reports whether key is f's own or below it.
func (f keyField) under(key string) bool {
	return key == f.key || strings.HasPrefix(key, f.key+".")
}

// neverRemoteKeys is NeverRemote read from the change tags: each table
// whose keys are all the till's own, else each such key, in field order.
func neverRemoteKeys() []string {
	var out []string
	for _, f := range keyFields {
		if slices.ContainsFunc(out, func(n string) bool { return strings.HasPrefix(f.key, n+".") }) {
			continue // its table is listed
		}
		remote := slices.ContainsFunc(keyFields, func(l keyField) bool {
			return !l.table && f.under(l.key) && (l.changes() == changeRemote || l.changes() == changeNamed)
		})
		if !remote {
			out = append(out, f.key)
		}
	}
	return out
}

// namedRemoteKeys is NamedRemote read from the change tags, in field
// order.
func namedRemoteKeys() []string {
	var out []string
	for _, f := range keyFields {
		if !f.table && f.changes() == changeNamed {
			out = append(out, f.key)
		}
	}
	return out
}

// RestartChanges is nil when cfg keeps every key of old that only a
// restart changes (change:"restart": data_dir, listen, listen_unix);
// otherwise an error naming the first one changed, with both values.
func RestartChanges(old, cfg Config) error {
	ov, nv := reflect.ValueOf(old), reflect.ValueOf(cfg)
	for _, f := range keyFields {
		if f.table || f.changes() != changeRestart {
			continue
		}
		a, b := ov.FieldByIndex(f.index), nv.FieldByIndex(f.index)
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			return fmt.Errorf("%s: cannot change while receiptd runs (from %s to %s); change it in the till's own file and restart receiptd",
				f.key, quoteValue(a), quoteValue(b))
		}
	}
	return nil
}

// quoteValue writes a key's value for a message: text quoted, anything
// else as fmt writes it (a Secret as "(set)").
func quoteValue(v reflect.Value) string {
	if v.Kind() == reflect.String {
		return strconv.Quote(v.String())
	}
	return fmt.Sprint(v.Interface())
}
