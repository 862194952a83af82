//go:build !windows

package main

import "github.com/kardianos/service"

// startedBySCM: only Windows has a service control manager to ask.
func startedBySCM() bool { return false }

// runService runs s through kardianos/service (systemd waits in RunWait).
func runService(s service.Service, _ *program) error { return s.Run() }

// eventLogger is the service logger; only Windows has an Event Log.
func eventLogger(s service.Service) (service.Logger, error) { return s.Logger(nil) }
