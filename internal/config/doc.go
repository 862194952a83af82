// Package config owns receiptd's configuration: one Config struct, the
// defaults in one place (Default), loading a TOML file over them with
// environment overrides for secrets (Load), and checking the result
// (Validate).
//
// It promises that a refused file is reported whole: every unknown key
// (with a guess at the key meant), every value of the wrong type and every
// value out of range, each naming its key and its line in the file's own
// terms (a syntax error alone, with its line); see Error. And that
// config.example.toml at the repository root documents every key with its
// default (a test decodes it against Default).
//
// Durations are TOML strings in Go's syntax ("5s", "24h"); sizes are MiB.
// Secrets may come from the environment instead of the file: see
// EnvAuthToken, EnvUpstreamHeaderPrefix, EnvLookupHeaderPrefix,
// EnvFleetHeaderPrefix and EnvControlHeaderPrefix.
//
// A value that must not be shown (auth.token, auth.metrics_token, every
// header value) is a Secret: it prints, logs and marshals as "(set)", and
// only Reveal gives it, where it goes on the wire. How each key may change
// (only by a restart, in place from the till's own file, or also by a head
// office, or by a head office only where the till's own file names the
// key) is its field's change tag; RestartChanges, NeverRemote and
// NamedRemote are read from it. Every number and duration a till can be
// stalled, flooded or emptied by has a safe range in Bounds, the one table
// Validate and the contract read.
//
// Merge lays a head office's remote fragment ([control]) over a till's own
// file, refused whole, with the fragment's lines, when it does not
// validate, sets a key outside control.allow, in NeverRemote, or in
// NamedRemote without the own file naming it, or does what no head office
// may even where allowed (remote.go): snapshots to a network share, a
// push in clear to another computer. The till's own push headers go only
// to its own file's push URL.
package config
