//go:build !windows

package service

import kservice "github.com/kardianos/service"

// startedBySCM: only Windows has a service control manager to ask.
func startedBySCM() bool { return false }

// runService runs s through kardianos/service (systemd waits in RunWait).
func runService(s kservice.Service, _ *program) error { return s.Run() }

// eventLogger is the service logger; only Windows has an Event Log.
func eventLogger(s kservice.Service) (kservice.Logger, error) { return s.Logger(nil) }
