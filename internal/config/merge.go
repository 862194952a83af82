package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
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
	return merge(ownPath, fragment, os.Environ())
}

func merge(ownPath string, fragment []byte, environ []string) (Merged, error) {
	var own []byte
	if ownPath != "" {
		var err error
		if own, err = os.ReadFile(ownPath); err != nil {
			return Merged{}, fmt.Errorf("read config: %w", err)
		}
	}
	base, problems := parse(own, environ)
	if len(problems) > 0 {
		return Merged{}, &Error{Source: ownPath, Problems: problems}
	}
	if isBlank(fragment) {
		return Merged{Config: base}, nil
	}
	cfg, keys, problems := overlay(own, fragment, environ, base.Control.Allow)
	if len(problems) == 0 {
		problems = remoteValues(base, &cfg, keys) // remote.go
	}
	if len(problems) > 0 {
		hideFiles(problems)
		return Merged{}, &Error{Source: FragmentSource, Problems: problems}
	}
	return Merged{Config: cfg, RemoteKeys: keys, Hash: FragmentHash(fragment)}, nil
}

// overlay decodes own (known good), then fragment over it, then the
// environment, and returns the result with the fragment's keys, or every
// problem, sorted by its line in the fragment.
func overlay(own, fragment []byte, environ, allow []string) (Config, []string, []*KeyError) {
	cfg := Default()
	decodeDoc(own, &cfg)
	lines, problems := decodeDoc(fragment, &cfg)
	if len(problems) > 0 && problems[0].Key == "" {
		return Config{}, nil, problems // syntax: nothing else can be read
	}
	keys := leafKeysOf(lines)
	for _, key := range keys {
		if hasKey(problems, key) {
			continue // unknown, or a bad value: already said
		}
		if problem := remoteProblem(key, allow); problem != "" {
			problems = append(problems, &KeyError{Key: key, Problem: problem, Line: lines[key]})
		}
	}
	applyEnv(&cfg, environ)
	if err := cfg.Validate(); err != nil {
		for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
			ke := *e.(*KeyError)
			if !hasKey(problems, ke.Key) {
				ke.Line = lineOf(&ke, lines)
				problems = append(problems, &ke)
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
// fragment sets, rather than the tables it opens.
func leafKeysOf(lines map[string]int) []string {
	var leaves []string
	for _, k := range slices.Sorted(maps.Keys(lines)) {
		below := false
		for other := range lines {
			if strings.HasPrefix(other, k+".") {
				below = true
				break
			}
		}
		if !below {
			leaves = append(leaves, k)
		}
	}
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
