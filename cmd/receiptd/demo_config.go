package main

import (
	"flag"
	"fmt"
	"net"
	"time"

	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/sim"
)

// demoSim is the demo's own simulator: where it listens and what PosAPI
// state it starts in (the same flags as `receiptd sim`).
type demoSim struct {
	listen       string
	lotteries    int
	sendDataFail bool
	clockSkew    time.Duration
}

func (s *demoSim) register(fs *flag.FlagSet) {
	fs.StringVar(&s.listen, "sim-listen", "127.0.0.1:7081", "loopback address of the demo's simulator, for its /sim control API (a free port if this one is busy)")
	fs.IntVar(&s.lotteries, "lotteries", sim.DefaultLotteries, "the simulated PosAPI's lottery reserve; later: PUT /sim/lotteries {\"left\":N}")
	fs.BoolVar(&s.sendDataFail, "send-data-fail", false, "the simulated PosAPI's sendData fails; later: PUT /sim/faults {\"sendDataFail\":false}")
	fs.DurationVar(&s.clockSkew, "clock-skew", 0, "shift the simulated tax service's clock, e.g. -5m; later: PUT /sim/faults {\"clockSkew\":\"0s\"}")
}

// start starts the simulator on its address, or on a free port when that
// one is busy (a `receiptd sim` already there, say).
func (s demoSim) start(log *zap.Logger) (*sim.Sim, error) {
	sm := sim.New(sim.Options{Seed: time.Now().UnixNano(), Lotteries: s.lotteries})
	if err := sm.SetFaults(sim.Faults{SendDataFail: s.sendDataFail, ClockSkew: s.clockSkew}); err != nil {
		return nil, usagef("%v", err)
	}
	if err := sm.Start(s.listen); err != nil {
		log.Info("simulator address busy; using a free port", zap.String("listen", s.listen), zap.Error(err))
		if err := sm.Start("127.0.0.1:0"); err != nil {
			return nil, fmt.Errorf("demo: start the simulator: %w", err)
		}
	}
	return sm, nil
}

// demoBase is the demo's defaults: config.Default with short backoff, so a
// recovery shows within seconds, and PosAPI read every 10 seconds (the least posapi.check_every allows), so its
// limits do too. A -config file is laid over it.
func demoBase() config.Config {
	cfg := config.Default()
	cfg.Upstream.Timeout = config.Dur(5 * time.Second)
	cfg.Sync.MinBackoff = config.Dur(500 * time.Millisecond)
	cfg.Sync.MaxBackoff = config.Dur(3 * time.Second)
	cfg.PosAPI.CheckEvery = config.Dur(10 * time.Second)
	return cfg
}

// demoConfig is demoBase with o.config's keys laid over it (its [fleet],
// [posapi], [backup] and other sections apply), then what the demo owns:
// its listen address, its data directory, no log file (the terminal is the
// log), and every upstream URL at its simulator, so no lookup leaves this
// computer; a lookup URL the file set elsewhere is named in a warning.
func demoConfig(o demoOptions, dir, simURL string, log *zap.Logger) (config.Config, error) {
	cfg := demoBase()
	if o.config != "" {
		var err error
		if cfg, err = config.LoadOnto(cfg, o.config); err != nil {
			return config.Config{}, usageError{err: err}
		}
		log.Info("demo: the config file's sections apply; the simulator, data directory, listen address and upstream URLs stay the demo's",
			zap.String("config", o.config))
	}
	listen := o.listen
	if ln, err := net.Listen("tcp", listen); err != nil {
		log.Info("address busy; using a free port", zap.String("listen", listen), zap.Error(err))
		listen = "127.0.0.1:0"
	} else {
		_ = ln.Close()
	}
	cfg.Listen, cfg.ListenUnix, cfg.DataDir, cfg.Log.File = listen, "", dir, ""
	cfg.Upstream.BaseURL = simURL
	for _, w := range cfg.Upstream.FollowBaseURL() {
		log.Warn("demo: " + w)
	}
	if cfg.Upstream.Proxy != "" {
		log.Warn("demo: upstream.proxy is not used: the lookups go to the simulator directly", zap.String("proxy", cfg.Upstream.Proxy))
		cfg.Upstream.Proxy = ""
	}
	if err := cfg.Validate(); err != nil {
		return config.Config{}, usageError{err: fmt.Errorf("demo: %w", err)}
	}
	return cfg, nil
}
