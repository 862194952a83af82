package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// FragmentSource is the Source of an *Error about a remote fragment: its
// lines are the fragment's own.
const FragmentSource = "the remote config"

// Merged is the till's own configuration with a head office's fragment
// laid over it.
type Merged struct {
	Config Config
	// RemoteKeys are the keys the fragment set, dotted and sorted; empty
	// when the fragment is.
	RemoteKeys []string
	// Hash is FragmentHash of the fragment; "" when it is empty.
	Hash string
}

// FragmentHash is the hex SHA-256 of a remote fragment as received, the
// name config check and /receiptd/status give it; "" for an empty one.
func FragmentHash(fragment []byte) string {
	if isBlank(fragment) {
		return ""
	}
	sum := sha256.Sum256(fragment)
	return hex.EncodeToString(sum[:])
}

func isBlank(fragment []byte) bool { return strings.TrimSpace(string(fragment)) == "" }

// Merge reads the till's own file at ownPath ("" for none) as Load does,
// lays the remote TOML fragment over it (tables merge key by key, a list
// replaces the file's), applies the environment overrides, and checks the
// result. An empty fragment gives the till's own file.
//
// A fragment is refused whole: every unknown key, bad value, key outside
// the own file's control.allow and key of NeverRemote, and every problem
// Validate finds in the result, is a *KeyError with its line in the
// fragment (0 when the key is not in it), in an *Error whose Source is
// FragmentSource. A refused own file is Load's error, with its Source.
func Merge(ownPath string, fragment []byte) (Merged, error) {
	return merge(Default(), ownPath, fragment, os.Environ())
}

// MergeOnto is Merge over base instead of Default: the own file (if any)
// is read onto base, then the fragment laid over it. A till without a
// file of its own whose settings were made otherwise (receiptd demo's
// data directory, listen address and simulator) passes them as base, so a
// fragment changes what it names and nothing else.
func MergeOnto(base Config, ownPath string, fragment []byte) (Merged, error) {
	return merge(base, ownPath, fragment, os.Environ())
}

func merge(start Config, ownPath string, fragment []byte, environ []string) (Merged, error) {
	var own []byte
	if ownPath != "" {
		var err error
		if own, err = os.ReadFile(ownPath); err != nil {
			return Merged{}, fmt.Errorf("read config: %w", err)
		}
	}
	base, problems := parseOnto(start, own, environ)
	if len(problems) > 0 {
		return Merged{}, &Error{Source: ownPath, Problems: problems}
	}
	if isBlank(fragment) {
		return Merged{Config: base}, nil
	}
	if problem := oversized(fragment); problem != nil {
		return Merged{}, &Error{Source: FragmentSource, Problems: []*KeyError{problem}}
	}
	cfg, keys, problems := overlay(start, own, fragment, environ, base.Control.Allow)
	if len(problems) == 0 {
		problems = remoteValues(base, &cfg, keys) // remote.go
	}
	if len(problems) > 0 {
		hideFiles(problems)
		return Merged{}, &Error{Source: FragmentSource, Problems: problems}
	}
	return Merged{Config: cfg, RemoteKeys: keys, Hash: FragmentHash(fragment)}, nil
}

// A fragment's bounds. A whole configuration has about 100 keys (besides
// a few labels and headers) and config.example.toml, every key with its
// comment, under 400 lines. Reading the line of each key costs a pass over
// the whole fragment (decodeDoc's probe), so keys times lines is what
// these bound: a fragment of 16,000 labels took 28 s to refuse (issue 38).
const (
	maxFragmentKeys  = 512
	maxFragmentLines = 10000
)

// oversized refuses a fragment over maxFragmentLines or maxFragmentKeys
// with one problem, before any key is looked at; nil otherwise (a syntax
// error too: decodeDoc reports it with its line). It reads the fragment
// once more, in time linear in its size.
func oversized(fragment []byte) *KeyError {
	if n := bytes.Count(fragment, []byte("\n")) + 1; n > maxFragmentLines {
		return &KeyError{Problem: fmt.Sprintf("the fragment has %d lines; at most %d are read (a whole configuration has under 400)", n, maxFragmentLines)}
	}
	var top map[string]any
	md, err := toml.Decode(string(fragment), &top)
	if err != nil {
		return nil
	}
	if n := len(md.Keys()); n > maxFragmentKeys {
		return &KeyError{Problem: fmt.Sprintf("the fragment sets %d keys and tables; at most %d are read (a whole configuration has about 100)", n, maxFragmentKeys)}
	}
	return nil
}

// overlay decodes own (known good), then fragment over it, then the
// environment, and returns the result with the fragment's keys, or every
// problem, sorted by its line in the fragment.
func overlay(start Config, own, fragment []byte, environ, allow []string) (Config, []string, []*KeyError) {
	cfg := start
	cloneRefs(reflect.ValueOf(&cfg).Elem())
	decodeDoc(own, &cfg)
	lines, problems := decodeDoc(fragment, &cfg)
	if len(problems) > 0 && problems[0].Key == "" {
		return Config{}, nil, problems // syntax: nothing else can be read
	}
	// said holds the keys already refused, so that a key gets one problem
	// (a set: a fragment of many keys is not compared with every problem).
	said := make(map[string]bool, len(problems))
	for _, p := range problems {
		said[p.Key] = true
	}
	keys := leafKeysOf(lines)
	for _, key := range keys {
		if said[key] {
			continue // unknown, or a bad value: already said
		}
		if problem := remoteProblem(key, allow); problem != "" {
			problems = append(problems, &KeyError{Key: key, Problem: problem, Line: lines[key]})
			said[key] = true
		}
	}
	applyEnv(&cfg, environ)
	if err := cfg.Validate(); err != nil {
		for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
			ke := *e.(*KeyError)
			if !said[ke.Key] {
				ke.Line = lineOf(&ke, lines)
				problems = append(problems, &ke)
				said[ke.Key] = true
			}
		}
	}
	if len(problems) > 0 {
		sortByLine(problems)
		return Config{}, nil, problems
	}
	return cfg, keys, nil
}

// leafKeysOf returns the keys of lines that no other key is below: what a
// fragment sets, rather than the tables it opens. It is linear in the
// keys' length: every dotted prefix of a key is a table above it, so the
// leaves are the keys that are nobody's prefix (a fragment of 16,000
// labels compared every key with every other, 28 s; issue 38).
func leafKeysOf(lines map[string]int) []string {
	tables := make(map[string]bool, len(lines))
	for k := range lines {
		for i := range len(k) {
			if k[i] == '.' {
				tables[k[:i]] = true
			}
		}
	}
	leaves := make([]string, 0, len(lines))
	for k := range lines {
		if !tables[k] {
			leaves = append(leaves, k)
		}
	}
	slices.Sort(leaves)
	return leaves
}

// remoteProblem says why a fragment may not set key, or "".
func remoteProblem(key string, allow []string) string {
	if never := neverRemote(key); never != "" {
		return fmt.Sprintf("can never be set remotely (%s is the till's own); the till keeps its own value", never)
	}
	if problem := namedProblem(key, allow); problem != "" {
		return problem
	}
	for _, a := range allow {
		if strings.EqualFold(key, a) || strings.HasPrefix(strings.ToLower(key), strings.ToLower(a)+".") {
			return ""
		}
	}
	return "is not in control.allow of the till's own file; list it there to let the head office set it"
}
