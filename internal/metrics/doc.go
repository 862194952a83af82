// Package metrics owns receiptd's Prometheus collectors and the /metrics
// handler.
//
// Every method works on a nil *Metrics and then does nothing, so the store,
// the sync worker, the cache and the API can be built and tested without
// metrics. A *Metrics is safe for concurrent use. It has its own registry
// (never the global default one), holding receiptd's series plus the Go
// runtime and process collectors.
//
// Series (all prefixed receiptd_):
//
//	send_attempts_total{kind,outcome}     counter   sync worker, one per upstream call
//	send_duration_seconds{kind}           histogram upstream call latency
//	ambiguous_attempts_total              counter   request sent, answer lost
//	upstream_up                           gauge     1 reachable, 0 not (0 until first told)
//	unsent_alert_level                    gauge     0 none, 1 warn, 2 critical
//	commit_duration_seconds               histogram store group commit incl. fsync
//	commit_batch_size                     histogram writes per group commit
//	cache_requests_total{kind,result}     counter   lookup cache: hit, miss, stale
//	http_requests_total{route,code}       counter   local API
//	http_request_duration_seconds{route}  histogram local API latency
//	auth_failures_total{reason}           counter   local API requests refused 401 (missing, malformed, wrong)
//	connections_closed_at_cap_total{which} counter  local API connections closed at max_connections (idle: the oldest idle; new: all were busy)
//	receipts_accepted_total{replayed}     counter   creates stored (false) or answered from an earlier one (true)
//	queue_entries{state}                  gauge     read at scrape time (WatchQueue)
//	oldest_unsent_age_seconds             gauge     read at scrape time (WatchQueue)
//	queue_stats_ok                        gauge     1 if the last scrape could read the queue
//	store_disk_full                       gauge     1 while writes fail for a full disk (WatchStore)
//	store_failed                          gauge     1 when the database refuses writes until restart (WatchStore)
//	log_flushes_total                     counter   write-ahead log flushes (WatchLog)
//	log_records_total                     counter   records they made durable; over flushes, the mean group
//	posapi_left_lotteries, posapi_last_sent_age_seconds, posapi_lottery_pace_per_hour,
//	posapi_own_share (each {posapi}), clock_skew_seconds, send_data_total{posapi,result}:
//	                                      PosAPI's own limits (WatchPosAPI, posapi.go)
//	backup_*                              snapshots ([backup]): last success, failures, size (backup.go)
//	update_*                              the version answering, update.json's phase, rollbacks and
//	                                      refusals for good (WatchUpdate, update.go)
//
// One *Metrics may serve several daemons in turn (a config applied in
// place): Unwatch stops reading the one that stopped and carries its
// component totals over, so no counter starts again from zero.
//
// Label values are the caller's: kind, outcome, result and route must come
// from small fixed sets, posapi is one value per process (PosAPI's posNo,
// else its host and port) (a route is the route pattern, never the raw path).
// As a guard, routes past the first 64 distinct ones are counted as "other".
package metrics
