package daemon

import (
	"net/url"
	"time"

	"github.com/receiptd/receiptd/internal/cache"
	"github.com/receiptd/receiptd/internal/client"
	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/posapi"
	"github.com/receiptd/receiptd/internal/syncer"
)

// clientConfig maps [upstream] onto the client's configuration.
func clientConfig(u config.Upstream) client.Config {
	p := u.Paths
	return client.Config{
		BaseURL: u.BaseURL, LookupBaseURL: u.LookupBaseURL, StockBaseURL: u.StockBaseURL,
		Paths: map[client.Op]string{
			client.OpCreateReceipt: p.CreateReceipt, client.OpDeleteReceipt: p.DeleteReceipt,
			client.OpInfo: p.Info, client.OpSendData: p.SendData, client.OpBankAccounts: p.BankAccounts,
			client.OpBranchInfo: p.BranchInfo, client.OpProductTaxCode: p.ProductTaxCode,
			client.OpMerchantInfo: p.MerchantInfo, client.OpTinInfo: p.TinInfo,
			client.OpClassification: p.Classification,
			client.OpStockQr:        p.StockQr, client.OpSaveMerchants: p.SaveOprMerchants,
		},
		Timeout: u.Timeout.Duration, Headers: config.RevealAll(u.Headers), LookupHeaders: config.RevealAll(u.LookupHeaders),
		CAFile: u.CAFile, Proxy: u.Proxy, MaxAnswer: int64(u.MaxAnswer) << 20,
	}
}

// syncConfig maps [sync], [alerts] and shutdown_timeout onto the worker's.
func syncConfig(c config.Config) syncer.Config {
	return syncer.Config{
		Concurrency: c.Sync.Concurrency, MinBackoff: c.Sync.MinBackoff.Duration,
		MaxBackoff: c.Sync.MaxBackoff.Duration, OnAmbiguous: c.Sync.OnAmbiguous,
		MaxAmbiguous:    c.Sync.MaxAmbiguous,
		ShutdownTimeout: c.ShutdownTimeout.Duration,
		UnsentWarn:      c.Alerts.UnsentWarn.Duration, UnsentCritical: c.Alerts.UnsentCritical.Duration,
		// A receipt refused for an empty lottery reserve waits as a
		// transient failure does, at the longest backoff.
		ReserveRetry: c.Sync.MaxBackoff.Duration,
	}
}

// posapiConfig maps [posapi] onto the watcher's.
func posapiConfig(p config.PosAPI, baseURL string) posapi.Config {
	host := baseURL
	if u, err := url.Parse(baseURL); err == nil && u.Host != "" {
		host = u.Host
	}
	return posapi.Config{
		CheckEvery: p.CheckEvery.Duration, AutoSendData: p.AutoSendData, SendAfter: p.SendAfter.Duration,
		MinLotteries: p.MinLotteries, SendEvery: p.SendEvery.Duration, MaxClockSkew: p.MaxClockSkew.Duration,
		SendSpread: p.SendSpread.Duration, RefillBefore: p.RefillBefore.Duration, Upstream: host,
	}
}

// mailboxConfig maps the answer bounds of [accept] onto the mailbox's.
func mailboxConfig(a config.Accept) syncer.MailboxConfig {
	return syncer.MailboxConfig{
		AnswerTTL: a.AnswerTTL.Duration, MaxResults: a.AnswerCount, MaxResultBytes: int64(a.AnswerMB) << 20,
	}
}

// cacheConfig maps [cache] onto the lookup cache's.
func cacheConfig(c config.Cache) cache.Config {
	r := c.Refresh
	refresh := map[client.Op]time.Duration{
		client.OpBranchInfo: r.BranchInfo.Duration, client.OpProductTaxCode: r.ProductTaxCode.Duration,
		client.OpMerchantInfo: r.MerchantInfo.Duration, client.OpTinInfo: r.TinInfo.Duration,
		client.OpInfo: r.Info.Duration, client.OpBankAccounts: r.BankAccounts.Duration,
		client.OpClassification: r.Classification.Duration,
		client.OpStockQr:        r.StockQr.Duration,
	}
	return cache.Config{
		Refresh: refresh, NegativeTTL: c.NegativeTTL.Duration,
		MaxStale: c.MaxStale.Duration, MaxEntries: c.MaxEntries,
	}
}
