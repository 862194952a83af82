package config

import (
	"fmt"
	"time"

	// The idempotency day is counted in accept.timezone; Windows tills have
	// no zoneinfo database of their own, so carry one in the binary.
	_ "time/tzdata"
)

// Config is the whole configuration. The zero value is not useful: start
// from Default.
//
// Every key's field carries, besides its toml tag, a change tag saying how
// it may change (change.go): "restart", "local" or "remote". A value that
// must not be shown (a token, a header value) is a Secret, which prints
// and marshals as "(set)" (secret.go).
type Config struct {
	// Listen is the TCP address of the local API (host:port). Empty turns
	// the TCP listener off, which needs ListenUnix.
	Listen string `toml:"listen" change:"restart"`
	// ListenUnix is the path of an optional Unix domain socket; empty: none.
	ListenUnix string `toml:"listen_unix" change:"restart"`
	// MaxConnections caps the open connections of each listener; at the
	// cap the oldest idle one is closed for a new one.
	MaxConnections int `toml:"max_connections" change:"remote"`
	// DataDir holds the database; an absolute path.
	DataDir string `toml:"data_dir" change:"restart"`
	// ShutdownTimeout bounds a clean stop.
	ShutdownTimeout Duration `toml:"shutdown_timeout" change:"remote"`

	Accept    Accept    `toml:"accept"`
	Upstream  Upstream  `toml:"upstream"`
	Sync      Sync      `toml:"sync"`
	Cache     Cache     `toml:"cache"`
	Alerts    Alerts    `toml:"alerts"`
	Retention Retention `toml:"retention"`
	Backup    Backup    `toml:"backup"`
	Fleet     Fleet     `toml:"fleet"`
	Auth      Auth      `toml:"auth"`
	Log       Log       `toml:"log"`
	PosAPI    PosAPI    `toml:"posapi"`
	Control   Control   `toml:"control"`
	Update    Update    `toml:"update"`
}

// Accept is how POST /rest/receipt answers.
type Accept struct {
	// Wait is how long a create waits for the upstream's answer before 202;
	// 0 answers 202 at once.
	Wait Duration `toml:"wait" change:"named"`
	// MaxWait bounds what a request may ask for with "Prefer: wait=N".
	MaxWait Duration `toml:"max_wait" change:"named"`
	// Timezone is the IANA zone (or "Local") whose calendar day goes into
	// the default idempotency key.
	Timezone string `toml:"timezone" change:"named"`
	// QueuedAnswer is how a receipt stored without the upstream's answer is
	// answered: "202" (202 with {"queueId","state","message"}) or "error"
	// (503 with PosAPI's error envelope, for POS software that reads any
	// 2xx as issued).
	QueuedAnswer string `toml:"queued_answer" change:"named"`
	// AnswerTTL is how long an upstream answer no POS has received yet is
	// held in memory for GET /receiptd/entries/{queueId}/answer.
	AnswerTTL Duration `toml:"answer_ttl" change:"remote"`
	// AnswerCount and AnswerMB bound the answers held in memory by count
	// and by total size (MiB); the oldest go first.
	AnswerCount int `toml:"answer_count" change:"remote"`
	AnswerMB    int `toml:"answer_mb" change:"remote"`
	// SkipRules names rules of the tax service's that receiptd stops
	// refusing at the till (receipt.AllRules; docs/pos-integration.md), for
	// a rule the tax service drops before a release does; empty: every
	// rule. Never nil after Default or Load. A head office may set it, so
	// a chain drops a rule on every till at once.
	SkipRules []string `toml:"skip_rules" change:"remote"`
}

// Values of Accept.QueuedAnswer.
const (
	QueuedAnswer202   = "202"
	QueuedAnswerError = "error"
)

// Location returns the time zone named by Timezone.
func (a Accept) Location() (*time.Location, error) {
	loc, err := time.LoadLocation(a.Timezone)
	if err != nil {
		return nil, fmt.Errorf("load time zone %q: %w", a.Timezone, err)
	}
	return loc, nil
}

// Upstream is where the tax service is and how to reach it.
type Upstream struct {
	// BaseURL is the PosAPI instance (receipts, info, sendData, bank
	// accounts).
	BaseURL string `toml:"base_url" change:"remote"`
	// LookupBaseURL is the public lookup API (district codes, product tax
	// codes, merchant and TIN info, classification).
	LookupBaseURL string `toml:"lookup_base_url" change:"remote"`
	// StockBaseURL is the excise stock API (getStockQr). It takes the
	// lookup API's proxy and headers.
	StockBaseURL string `toml:"stock_base_url" change:"remote"`
	Paths        Paths  `toml:"paths"`
	// Timeout bounds one upstream request.
	Timeout Duration `toml:"timeout" change:"remote"`
	// Headers are added to every request to BaseURL; LookupHeaders to every
	// request to LookupBaseURL. Never nil after Default or Load.
	Headers       map[string]Secret `toml:"headers" change:"remote"`
	LookupHeaders map[string]Secret `toml:"lookup_headers" change:"remote"`
	// CAFile is a PEM file of extra trusted CAs; empty: the system's.
	CAFile string `toml:"ca_file" change:"remote"`
	// MaxAnswer caps what is read of any upstream answer, in MiB (1 to 64).
	MaxAnswer int `toml:"max_answer" change:"remote"`
	// Proxy is an http, https or socks5 URL for the public lookup API only
	// (lookup_base_url); empty: the environment's HTTPS_PROXY / HTTP_PROXY.
	// PosAPI (base_url) never uses it.
	Proxy string `toml:"proxy" change:"remote"`
}

// Paths is the path of each upstream operation, below its base URL.
type Paths struct {
	CreateReceipt  string `toml:"create_receipt" change:"remote"`
	DeleteReceipt  string `toml:"delete_receipt" change:"remote"`
	Info           string `toml:"info" change:"remote"`
	SendData       string `toml:"send_data" change:"remote"`
	BankAccounts   string `toml:"bank_accounts" change:"remote"`
	BranchInfo     string `toml:"branch_info" change:"remote"`
	ProductTaxCode string `toml:"product_tax_code" change:"remote"`
	MerchantInfo   string `toml:"merchant_info" change:"remote"`
	TinInfo        string `toml:"tin_info" change:"remote"`
	Classification string `toml:"classification" change:"remote"`
	StockQr        string `toml:"stock_qr" change:"remote"`
	// SaveOprMerchants is below lookup_base_url.
	SaveOprMerchants string `toml:"save_opr_merchants" change:"remote"`
}

// Sync is the worker that drains the queue.
type Sync struct {
	// Concurrency is how many entries are sent at once.
	Concurrency int `toml:"concurrency" change:"remote"`
	// MinBackoff and MaxBackoff bound the retry interval after transient
	// failures (and so the pace of probing while the upstream is down).
	MinBackoff Duration `toml:"min_backoff" change:"remote"`
	MaxBackoff Duration `toml:"max_backoff" change:"remote"`
	// OnAmbiguous is "retry" or "hold": what to do after a send whose answer
	// was lost.
	OnAmbiguous string `toml:"on_ambiguous" change:"remote"`
	// MaxAmbiguous is how many ambiguous attempts a receipt may have before
	// it is held, whatever OnAmbiguous says; at least 1.
	MaxAmbiguous int `toml:"max_ambiguous" change:"remote"`
}

// Values of Sync.OnAmbiguous.
const (
	OnAmbiguousRetry = "retry"
	OnAmbiguousHold  = "hold"
)

// Cache is the lookup cache.
type Cache struct {
	Refresh CacheRefresh `toml:"refresh"`
	// NegativeTTL is how long a "not found" answer (an unknown TIN or
	// regNo) is kept before it is asked again; more than zero.
	NegativeTTL Duration `toml:"negative_ttl" change:"remote"`
	// MaxStale is the oldest data served when the upstream fails; 0: no
	// limit (offline is the normal case).
	MaxStale Duration `toml:"max_stale" change:"remote"`
	// MaxEntries bounds the number of cached answers.
	MaxEntries int `toml:"max_entries" change:"remote"`
}

// CacheRefresh is the background refresh interval of each kind of lookup.
type CacheRefresh struct {
	BranchInfo     Duration `toml:"branch_info" change:"remote"`
	ProductTaxCode Duration `toml:"product_tax_code" change:"remote"`
	MerchantInfo   Duration `toml:"merchant_info" change:"remote"`
	TinInfo        Duration `toml:"tin_info" change:"remote"`
	Info           Duration `toml:"info" change:"remote"`
	BankAccounts   Duration `toml:"bank_accounts" change:"remote"`
	Classification Duration `toml:"classification" change:"remote"`
	StockQr        Duration `toml:"stock_qr" change:"remote"`
}

// Alerts are the ageing thresholds of the oldest unsent entry, and how
// long the tax service may be out of reach before that is critical (a
// warning until then; the shipped rule ReceiptdTaxServiceDown waits as
// long).
type Alerts struct {
	UnsentWarn          Duration `toml:"unsent_warn" change:"remote"`
	UnsentCritical      Duration `toml:"unsent_critical" change:"remote"`
	OutageCriticalAfter Duration `toml:"outage_critical_after" change:"remote"`
}

// Retention is how long finished entries are kept.
type Retention struct {
	Keep          Duration `toml:"keep" change:"remote"`
	PruneInterval Duration `toml:"prune_interval" change:"remote"`
}

// Auth guards the local API.
type Auth struct {
	// Token, when set, is required as "Authorization: Bearer <token>" on
	// every route but /healthz. Required when Listen is not loopback.
	Token Secret `toml:"token" change:"local"`
	// MetricsToken, when set, opens GET /metrics (and nothing else) to
	// "Authorization: Bearer <metrics_token>"; it must differ from Token.
	MetricsToken Secret `toml:"metrics_token" change:"local"`
	// AllowedHosts are Host header names accepted besides loopback names.
	AllowedHosts []string `toml:"allowed_hosts" change:"local"`
}

// Log is where and how receiptd logs.
type Log struct {
	// Level is debug, info, warn or error.
	Level string `toml:"level" change:"remote"`
	// File is the log file, rotated by size; empty: standard error. It,
	// Format and the rotation are opened once: only a restart changes them,
	// and a head office never (a file path of its choosing could be
	// written anywhere the service may write).
	File string `toml:"file" change:"restart"`
	// Format is json, console, or auto (console on a terminal, else json).
	Format string `toml:"format" change:"restart"`
	// MaxSizeMB is the size at which File is rotated, in MiB.
	MaxSizeMB int `toml:"max_size_mb" change:"restart"`
	// MaxFiles is how many rotated files are kept.
	MaxFiles int `toml:"max_files" change:"restart"`
}

// Default returns the configuration used for every key a file leaves out.
// It is the one place defaults live.
func Default() Config {
	return Config{
		Listen:          "127.0.0.1:7080",
		MaxConnections:  256,
		DataDir:         defaultDataDir(),
		ShutdownTimeout: Dur(10 * time.Second),
		Accept: Accept{
			Wait:     Dur(5 * time.Second),
			MaxWait:  Dur(60 * time.Second),
			Timezone: "Asia/Ulaanbaatar",

			QueuedAnswer: QueuedAnswer202,
			AnswerTTL:    Dur(24 * time.Hour),
			AnswerCount:  10000,
			AnswerMB:     16,
			SkipRules:    []string{},
		},
		Upstream: defaultUpstream(),
		Sync: Sync{
			Concurrency:  2,
			MinBackoff:   Dur(time.Second),
			MaxBackoff:   Dur(10 * time.Second),
			OnAmbiguous:  OnAmbiguousRetry,
			MaxAmbiguous: 3,
		},
		Cache:     defaultCache(),
		Alerts:    Alerts{UnsentWarn: Dur(24 * time.Hour), UnsentCritical: Dur(72 * time.Hour), OutageCriticalAfter: Dur(15 * time.Minute)},
		Retention: Retention{Keep: Dur(2160 * time.Hour), PruneInterval: Dur(time.Hour)},
		Backup:    defaultBackup(),
		Fleet:     defaultFleet(),
		Auth:      Auth{AllowedHosts: []string{}},
		Log:       Log{Level: "info", Format: "auto", MaxSizeMB: 10, MaxFiles: 5},
		PosAPI:    defaultPosAPI(),
		Control:   defaultControl(),
		Update:    defaultUpdate(),
	}
}

func defaultUpstream() Upstream {
	return Upstream{
		// PosAPI listens on 7080 by default, which receiptd takes over
		// so the POS only changes host; PosAPI moves to 7081.
		BaseURL:       "http://127.0.0.1:7081",
		LookupBaseURL: "https://api.ebarimt.mn",
		StockBaseURL:  "https://service.itc.gov.mn",
		Paths: Paths{
			CreateReceipt:    "/rest/receipt",
			DeleteReceipt:    "/rest/receipt",
			Info:             "/rest/info",
			SendData:         "/rest/sendData",
			BankAccounts:     "/rest/bankAccounts",
			BranchInfo:       "/api/info/check/getBranchInfo",
			ProductTaxCode:   "/api/receipt/receipt/getProductTaxCode",
			MerchantInfo:     "/api/info/check/getInfo",
			TinInfo:          "/api/info/check/getTinInfo",
			Classification:   "/api/info/check/barcode/v2",
			StockQr:          "/api/inventory/stock/getStockQr",
			SaveOprMerchants: "/api/tpi/receipt/saveOprMerchants",
		},
		Timeout:       Dur(60 * time.Second),
		MaxAnswer:     1,
		Headers:       map[string]Secret{},
		LookupHeaders: map[string]Secret{},
	}
}

func defaultCache() Cache {
	return Cache{
		Refresh: CacheRefresh{
			BranchInfo:     Dur(24 * time.Hour),
			ProductTaxCode: Dur(24 * time.Hour),
			MerchantInfo:   Dur(time.Hour),
			TinInfo:        Dur(24 * time.Hour),
			Info:           Dur(time.Hour),
			BankAccounts:   Dur(24 * time.Hour),
			Classification: Dur(168 * time.Hour),
			StockQr:        Dur(168 * time.Hour),
		},
		NegativeTTL: Dur(10 * time.Minute),
		MaxEntries:  10000,
	}
}
