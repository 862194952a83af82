package main

import (
	"context"
	"fmt"
	"time"

	"github.com/receiptd/receiptd/internal/sim"
)

func init() {
	commands["sim"] = command{summary: "run the tax service simulator alone, with fault injection", run: runSim}
}

func runSim(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, "sim", "sim [-listen ADDR] [-seed N] [-latency D] [-error-rate F] [-drop-rate F] [-reject N [-reject-message M]]\n"+
		"    [-lotteries N] [-send-data-fail] [-send-data-latency D] [-clock-skew D] [-other-pace N]")
	usage := fs.Usage
	fs.Usage = func() { usage(); fmt.Fprint(env.stderr, simRoutesHelp) }
	listen := fs.String("listen", "127.0.0.1:7081", "address to listen on: 7081 is where receiptd's default upstream.base_url expects PosAPI, since receiptd takes PosAPI's usual port 7080")
	seed := fs.Int64("seed", time.Now().UnixNano(), "seed of ids, lottery numbers and fault rolls (a run is reproducible with the same seed)")
	latency := fs.Duration("latency", 0, "delay added to every answer")
	errorRate := fs.Float64("error-rate", 0, "share (0 to 1) of requests answered 503")
	dropRate := fs.Float64("drop-rate", 0, "share (0 to 1) of creates and deletes processed, then left unanswered")
	reject := fs.Int("reject", 0, "refuse the next N receipts as the tax service refuses an invalid one (HTTP 400, status ERROR); later: PUT /sim/faults {\"rejectNext\":N}")
	rejectMsg := fs.String("reject-message", sim.DefaultRejectMessage, "the message of those refusals")
	lotteries := fs.Int("lotteries", sim.DefaultLotteries, "PosAPI's lottery reserve (leftLotteries): each B2C receipt uses one, each sendData refills it; "+
		"at 0 B2C receipts are refused (HTTP 400, status ERROR); later: PUT /sim/lotteries {\"left\":N}")
	sendDataFail := fs.Bool("send-data-fail", false, "GET /rest/sendData fails (HTTP 500, status ERROR; nothing refilled); later: PUT /sim/faults {\"sendDataFail\":true}")
	sendDataLatency := fs.Duration("send-data-latency", 0, "delay added to sendData's answer; every create that arrives meanwhile waits for it, "+
		"as the live service holds them; later: PUT /sim/faults {\"sendDataLatency\":\"20s\"}")
	otherPace := fs.Float64("other-pace", 0, "other POS software on this PosAPI spends N lottery numbers a second from the same reserve "+
		"(a PosAPI shared by several tills); later: PUT /sim/faults {\"otherPace\":N}")
	clockSkew := fs.Duration("clock-skew", 0, "shift the service's clock (Date header, receipt dates, lastSentDate), e.g. -5m; later: PUT /sim/faults {\"clockSkew\":\"-5m\"}")
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	if *lotteries < 1 {
		return usagef("-lotteries must be at least 1")
	}
	s := sim.New(sim.Options{Seed: *seed, Lotteries: *lotteries})
	defer s.Close()
	if err := s.SetFaults(sim.Faults{Latency: *latency, ErrorRate: *errorRate, DropRate: *dropRate,
		RejectNext: *reject, RejectMessage: *rejectMsg, SendDataFail: *sendDataFail,
		SendDataLatency: *sendDataLatency, ClockSkew: *clockSkew, OtherPace: *otherPace}); err != nil {
		return usagef("%v", err)
	}
	if err := s.Start(*listen); err != nil {
		return fmt.Errorf("start simulator: %w", err)
	}
	printSimHelp(env, s.URL(), *seed)
	<-ctx.Done()
	fmt.Fprintln(env.stderr, "simulator stopped")
	return nil
}

// simRoutesHelp follows the flags in `receiptd sim -h`: the faults can be
// changed while it runs, and a PUT changes only what it names.
const simRoutesHelp = `
While it runs, its control API on the same address (never faulted) changes the faults:
  GET    /sim/faults   every fault in force
  PUT    /sim/faults   change only the faults the body names; the others stay:
                       {"sendDataFail":true} then {"clockSkew":"-5m"} leaves both in force
  DELETE /sim/faults   clear them all
  PUT    /sim/lotteries {"left":N}, GET /sim/receipts, GET /sim/requests, POST /sim/reset
Fields of /sim/faults: down, downFor, latency, errorRate, dropRate, rejectNext, rejectMessage,
  sendDataFail, sendDataLatency, clockSkew, otherPace (durations as "30s", "-5m").
`

func printSimHelp(env *cmdEnv, base string, seed int64) {
	fmt.Fprintf(env.stdout, `tax service simulator listening on %[1]s (seed %[2]d)
point receiptd at it: upstream.base_url = "%[1]s"
  (lookup_base_url and stock_base_url left at their defaults follow it: receiptd sees at start that it is this simulator)

the simulator's own API under /sim/ (never faulted):
  curl -s %[1]s/sim/faults                 the faults in force, every one
  (PUT /sim/faults changes only the faults it names; the others stay)
  curl -s -X PUT %[1]s/sim/faults -d '{"down":true,"downFor":"30s"}'
                                           refuse connections for 30s (give downFor: the /sim/ API goes down too)
  curl -s -X PUT %[1]s/sim/faults -d '{"latency":"2s","errorRate":0.2,"dropRate":0.1}'
                                           slow answers, 20%% 503s, 10%% answers lost after processing
  curl -s -X PUT %[1]s/sim/faults -d '{"rejectNext":2,"rejectMessage":"districtCode is wrong"}'
                                           refuse the next 2 receipts: HTTP 400 {"status":"ERROR","message":...}
  curl -s -X PUT %[1]s/sim/lotteries -d '{"left":0}'
                                           empty the lottery reserve: B2C receipts refused until a sendData
  curl -s -X PUT %[1]s/sim/faults -d '{"sendDataFail":true,"sendDataLatency":"20s","clockSkew":"-5m"}'
                                           sendData fails after 20s; the service's clock is 5 minutes behind
  curl -s -X PUT %[1]s/sim/faults -d '{"otherPace":5}'
                                           other tills on this PosAPI spend 5 lottery numbers a second
  curl -s %[1]s/sim/lotteries              the reserve, what other tills spent, B2C receipts refused for an empty one
  curl -s -X DELETE %[1]s/sim/faults       every fault cleared: healthy again
  curl -s %[1]s/sim/receipts               receipts issued (lottery and QR data included: a test tool)
  curl -s %[1]s/sim/requests               request counts per route
  curl -s -X POST %[1]s/sim/reset          forget receipts and counts
Ctrl-C stops it.
`, base, seed)
}
