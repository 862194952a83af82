package demo

import (
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/sim"
)

// start starts the simulator on its address. A busy address is an error,
// not a move to a free port: the commands a person pastes name the
// address, and would reach the other program.
func (s Sim) start() (*sim.Sim, error) {
	sm := sim.New(sim.Options{Seed: time.Now().UnixNano(), Lotteries: s.Lotteries})
	if err := sm.SetFaults(sim.Faults{SendDataFail: s.SendDataFail, ClockSkew: s.ClockSkew}); err != nil {
		return nil, UsageError{Err: err, Misused: true}
	}
	if err := sm.Start(s.Listen); err != nil {
		_ = sm.Close()
		return nil, fmt.Errorf("demo: start the simulator: %w", err)
	}
	return sm, nil
}

// Base is the demo's defaults: config.Default with short backoff, so a
// recovery shows within seconds, and PosAPI read every 10 seconds (the
// least posapi.check_every allows), so its limits do too. A -config file is
// laid over it.
func Base() config.Config {
	cfg := config.Default()
	cfg.Upstream.Timeout = config.Dur(5 * time.Second)
	cfg.Sync.MinBackoff = config.Dur(500 * time.Millisecond)
	cfg.Sync.MaxBackoff = config.Dur(3 * time.Second)
	cfg.PosAPI.CheckEvery = config.Dur(10 * time.Second)
	return cfg
}

// Config is Base with o.Config's keys laid over it (its [fleet], [posapi],
// [backup] and other sections apply), then what the demo owns: its listen
// address, its data directory dir, no log file (the terminal is the log),
// and every upstream URL at its simulator simURL, so no lookup leaves this
// computer; a lookup URL the file set elsewhere is named in a warning.
func Config(o Options, dir, simURL string, log *zap.Logger) (config.Config, error) {
	cfg := Base()
	if o.Config != "" {
		var err error
		if cfg, err = config.LoadOnto(cfg, o.Config); err != nil {
			return config.Config{}, UsageError{Err: err}
		}
		log.Info("demo: the config file's sections apply; the simulator, data directory, listen address and upstream URLs stay the demo's",
			zap.String("config", o.Config))
	}
	cfg.Listen, cfg.ListenUnix, cfg.DataDir, cfg.Log.File = o.Listen, "", dir, ""
	cfg.Upstream.BaseURL = simURL
	for _, w := range cfg.Upstream.FollowBaseURL() {
		log.Warn("demo: " + w)
	}
	if cfg.Upstream.Proxy != "" {
		log.Warn("demo: upstream.proxy is not used: the lookups go to the simulator directly", zap.String("proxy", cfg.Upstream.Proxy))
		cfg.Upstream.Proxy = ""
	}
	if err := cfg.Validate(); err != nil {
		return config.Config{}, UsageError{Err: fmt.Errorf("demo: %w", err)}
	}
	return cfg, nil
}
