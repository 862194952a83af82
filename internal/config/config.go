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
type Config struct {
	// Listen is the TCP address of the local API (host:port). Empty turns
	// the TCP listener off, which needs ListenUnix.
	Listen string `toml:"listen"`
	// ListenUnix is the path of an optional Unix domain socket; empty: none.
	ListenUnix string `toml:"listen_unix"`
	// MaxConnections caps the open connections of each listener; at the
	// cap the oldest idle one is closed for a new one.
	MaxConnections int `toml:"max_connections"`
	// DataDir holds the database; an absolute path.
	DataDir string `toml:"data_dir"`
	// ShutdownTimeout bounds a clean stop.
	ShutdownTimeout Duration `toml:"shutdown_timeout"`

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
}

// Accept is how POST /rest/receipt answers.
type Accept struct {
	// Wait is how long a create waits for the upstream's answer before 202;
	// 0 answers 202 at once.
	Wait Duration `toml:"wait"`
	// MaxWait bounds what a request may ask for with "Prefer: wait=N".
	MaxWait Duration `toml:"max_wait"`
	// Timezone is the IANA zone (or "Local") whose calendar day goes into
	// the default idempotency key.
	Timezone string `toml:"timezone"`
	// QueuedAnswer is how a receipt stored without the upstream's answer is
	// answered: "202" (202 with {"queueId","state","message"}) or "error"
	// (503 with PosAPI's error envelope, for POS software that reads any
	// 2xx as issued).
	QueuedAnswer string `toml:"queued_answer"`
	// AnswerTTL is how long an upstream answer no POS has received yet is
	// held in memory for GET /receiptd/entries/{queueId}/answer.
	AnswerTTL Duration `toml:"answer_ttl"`
	// AnswerCount and AnswerMB bound the answers held in memory by count
	// and by total size (MiB); the oldest go first.
	AnswerCount int `toml:"answer_count"`
	AnswerMB    int `toml:"answer_mb"`
	// SkipRules names rules of the tax service's that receiptd stops
	// refusing at the till (receipt.AllRules; docs/pos-integration.md), for
	// a rule the tax service drops before a release does; empty: every
	// rule. Never nil after Default or Load.
	SkipRules []string `toml:"skip_rules"`
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
	BaseURL string `toml:"base_url"`
	// LookupBaseURL is the public lookup API (district codes, product tax
	// codes, merchant and TIN info, classification).
	LookupBaseURL string `toml:"lookup_base_url"`
	// StockBaseURL is the excise stock API (getStockQr). It takes the
	// lookup API's proxy and headers.
	StockBaseURL string `toml:"stock_base_url"`
	Paths        Paths  `toml:"paths"`
	// Timeout bounds one upstream request.
	Timeout Duration `toml:"timeout"`
	// Headers are added to every request to BaseURL; LookupHeaders to every
	// request to LookupBaseURL. Never nil after Default or Load.
	Headers       map[string]string `toml:"headers"`
	LookupHeaders map[string]string `toml:"lookup_headers"`
	// CAFile is a PEM file of extra trusted CAs; empty: the system's.
	CAFile string `toml:"ca_file"`
	// MaxAnswer caps what is read of any upstream answer, in MiB (1 to 64).
	MaxAnswer int `toml:"max_answer"`
	// Proxy is an http, https or socks5 URL for the public lookup API only
	// (lookup_base_url); empty: the environment's HTTPS_PROXY / HTTP_PROXY.
	// PosAPI (base_url) never uses it.
	Proxy string `toml:"proxy"`
}

// Paths is the path of each upstream operation, below its base URL.
type Paths struct {
	CreateReceipt  string `toml:"create_receipt"`
	DeleteReceipt  string `toml:"delete_receipt"`
	Info           string `toml:"info"`
	SendData       string `toml:"send_data"`
	BankAccounts   string `toml:"bank_accounts"`
	BranchInfo     string `toml:"branch_info"`
	ProductTaxCode string `toml:"product_tax_code"`
	MerchantInfo   string `toml:"merchant_info"`
	TinInfo        string `toml:"tin_info"`
	Classification string `toml:"classification"`
	StockQr        string `toml:"stock_qr"`
	// SaveOprMerchants is below lookup_base_url.
	SaveOprMerchants string `toml:"save_opr_merchants"`
}

// Sync is the worker that drains the queue.
type Sync struct {
	// Concurrency is how many entries are sent at once.
	Concurrency int `toml:"concurrency"`
	// MinBackoff and MaxBackoff bound the retry interval after transient
	// failures (and so the pace of probing while the upstream is down).
	MinBackoff Duration `toml:"min_backoff"`
	MaxBackoff Duration `toml:"max_backoff"`
	// OnAmbiguous is "retry" or "hold": what to do after a send whose answer
	// was lost.
	OnAmbiguous string `toml:"on_ambiguous"`
	// MaxAmbiguous is how many ambiguous attempts a receipt may have before
	// it is held, whatever OnAmbiguous says; at least 1.
	MaxAmbiguous int `toml:"max_ambiguous"`
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
	NegativeTTL Duration `toml:"negative_ttl"`
	// MaxStale is the oldest data served when the upstream fails; 0: no
	// limit (offline is the normal case).
	MaxStale Duration `toml:"max_stale"`
	// MaxEntries bounds the number of cached answers.
	MaxEntries int `toml:"max_entries"`
}

// CacheRefresh is the background refresh interval of each kind of lookup.
type CacheRefresh struct {
	BranchInfo     Duration `toml:"branch_info"`
	ProductTaxCode Duration `toml:"product_tax_code"`
	MerchantInfo   Duration `toml:"merchant_info"`
	TinInfo        Duration `toml:"tin_info"`
	Info           Duration `toml:"info"`
	BankAccounts   Duration `toml:"bank_accounts"`
	Classification Duration `toml:"classification"`
	StockQr        Duration `toml:"stock_qr"`
}

// Alerts are the ageing thresholds of the oldest unsent entry.
type Alerts struct {
	UnsentWarn     Duration `toml:"unsent_warn"`
	UnsentCritical Duration `toml:"unsent_critical"`
}

// Retention is how long finished entries are kept.
type Retention struct {
	Keep          Duration `toml:"keep"`
	PruneInterval Duration `toml:"prune_interval"`
}

// Auth guards the local API.
type Auth struct {
	// Token, when set, is required as "Authorization: Bearer <token>" on
	// every route but /healthz. Required when Listen is not loopback.
	Token string `toml:"token"`
	// MetricsToken, when set, opens GET /metrics (and nothing else) to
	// "Authorization: Bearer <metrics_token>"; it must differ from Token.
	MetricsToken string `toml:"metrics_token"`
	// AllowedHosts are Host header names accepted besides loopback names.
	AllowedHosts []string `toml:"allowed_hosts"`
}

// Log is where and how receiptd logs.
type Log struct {
	// Level is debug, info, warn or error.
	Level string `toml:"level"`
	// File is the log file, rotated by size; empty: standard error.
	File string `toml:"file"`
	// Format is json, console, or auto (console on a terminal, else json).
	Format string `toml:"format"`
	// MaxSizeMB is the size at which File is rotated, in MiB.
	MaxSizeMB int `toml:"max_size_mb"`
	// MaxFiles is how many rotated files are kept.
	MaxFiles int `toml:"max_files"`
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
		Alerts:    Alerts{UnsentWarn: Dur(24 * time.Hour), UnsentCritical: Dur(72 * time.Hour)},
		Retention: Retention{Keep: Dur(2160 * time.Hour), PruneInterval: Dur(time.Hour)},
		Backup:    defaultBackup(),
		Fleet:     defaultFleet(),
		Auth:      Auth{AllowedHosts: []string{}},
		Log:       Log{Level: "info", Format: "auto", MaxSizeMB: 10, MaxFiles: 5},
		PosAPI:    defaultPosAPI(),
		Control:   defaultControl(),
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
		Headers:       map[string]string{},
		LookupHeaders: map[string]string{},
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
