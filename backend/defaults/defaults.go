// Package defaults is the one table of FreeLane's default settings: the
// time limits of upstream requests, the circuit breaker's and the probes'
// tuning, and the limits on request bodies and stored answers.
//
// The config loader fills every key left out of the file from it, and each
// component that takes settings (upstream.New, breaker.New, probe.New,
// api.New, store.NewResponseStore) reads a zero setting as the value here,
// so a default is the same whether a component is built from a loaded
// configuration, by hand in a test, or with nothing set at all. The
// package imports nothing of FreeLane's, so every package may read it.
package defaults

import "time"

// The time limits of one upstream request, phase by phase, and of the
// connections they use.
const (
	// ConnectTimeout bounds establishing a connection (TCP and TLS).
	ConnectTimeout = 10 * time.Second
	// HeaderTimeout bounds waiting for the response headers.
	HeaderTimeout = 30 * time.Second
	// FirstTokenTimeout bounds waiting for the first content or tool-call
	// delta of a stream.
	FirstTokenTimeout = 20 * time.Second
	// LocalFirstTokenTimeout is the first-token limit of the servers
	// discovery finds on this machine: loading a model from disk can take
	// a while.
	LocalFirstTokenTimeout = 2 * time.Minute
	// IdleTimeout bounds the silence between two streamed chunks, or
	// within a body.
	IdleTimeout = 30 * time.Second
	// KeepAlive is the TCP keep-alive period of upstream connections.
	KeepAlive = 30 * time.Second
	// IdleConnTimeout is how long an unused upstream connection is kept.
	IdleConnTimeout = 90 * time.Second
)

// The circuit breaker kept for every backend.
const (
	// BreakerFailures is how many consecutive failures trip a backend.
	BreakerFailures = 2
	// BreakerOpen is how long a tripped backend is skipped, the first
	// step of OpenTimes.
	BreakerOpen = 30 * time.Second
	// HealthThreshold is the health score below which a failure trips a
	// backend.
	HealthThreshold = 0.6
	// HealthAlpha is the weight of the newest outcome in the health
	// score's moving average.
	HealthAlpha = 0.25
	// FlapWindow is how soon after recovering a backend that trips again
	// counts as flapping and moves one step up OpenTimes.
	FlapWindow = 5 * time.Minute
	// HealthyStretch is how long a backend stays closed to move one step
	// down OpenTimes.
	HealthyStretch = 10 * time.Minute
	// RateLimitFirstCooldown is the rest after the first 429 in a row that
	// did not say how long; each further one doubles it, up to
	// RateLimitCooldown.
	RateLimitFirstCooldown = 5 * time.Second
	// RateLimitCooldown is the longest a backend rests after 429s in a
	// row that did not say when to retry.
	RateLimitCooldown = 60 * time.Second
	// CredentialCooldown is how long a rejected key stays disabled.
	CredentialCooldown = time.Hour
	// RetireFallback ends a retirement of a backend that nobody probes.
	RetireFallback = 24 * time.Hour
	// SlowFactor marks a success slow when its first byte took more than
	// this many times the backend's rolling median, once SlowSamples
	// successes are known.
	SlowFactor  = 3.0
	SlowSamples = 10
	// ProbeFailures and ProbeSuccesses are the consecutive probe results
	// that mark a backend down and bring it back.
	ProbeFailures  = 2
	ProbeSuccesses = 2
)

// OpenTimes are the open periods a flapping backend climbs through when a
// trip opens it for open: open, then 10 and 60 times open (30 s, 5 min and
// 30 min for BreakerOpen).
func OpenTimes(open time.Duration) []time.Duration {
	return []time.Duration{open, 10 * open, 60 * open}
}

// The active health probes.
const (
	// ProbeInterval is how often a healthy probed backend is checked.
	ProbeInterval = 5 * time.Minute
	// ProbeOpenInterval is how often a tripped or down backend is checked.
	ProbeOpenInterval = 30 * time.Second
	// ProbeDaily is how often every catalog model is probed, to retire
	// withdrawn models and restore returned ones.
	ProbeDaily = 24 * time.Hour
	// ProbeTimeout bounds one probe.
	ProbeTimeout = 20 * time.Second
	// ProbeParallel is how many probes run at once.
	ProbeParallel = 4
)

// The listening server and what clients' requests may make it hold.
const (
	// Listen is the address the router listens on. It is on loopback
	// because anyone who can reach the router can spend the keys
	// configured in it.
	Listen = "127.0.0.1:7788"
	// MaxBodyMB is the request body limit in MiB.
	MaxBodyMB = 16
	// BodyReadTimeout bounds receiving one request body.
	BodyReadTimeout = 60 * time.Second
	// MaxInflightBodyMB caps the request bodies held at once, in MiB.
	MaxInflightBodyMB = 256
	// ResponseRetentionDays is how long stored Responses API answers are
	// kept: as long as OpenAI keeps them.
	ResponseRetentionDays = 30
	// ResponseStoreMB bounds, in MiB, the bytes of all stored Responses
	// API answers; past it the oldest are deleted.
	ResponseStoreMB = 512
	// RequestLogKeepDays is how long the request log keeps each request
	// (and its bodies) before the hourly housekeeping deletes it.
	RequestLogKeepDays = 90
	// LedgerRetentionDays is how long ledger rows are kept one by one
	// before they are rolled up into daily totals.
	LedgerRetentionDays = 30
	// ResponseCacheTTL is how long the response cache serves an answer.
	ResponseCacheTTL = 10 * time.Minute
	// ResponseCacheMB bounds, in MiB, the response cache's answers; past
	// it the least recently used go first.
	ResponseCacheMB = 256
	// RequestLogBodyKB bounds, in KiB, each request and answer body the
	// request log keeps when body logging is on.
	RequestLogBodyKB = 32
)

// MiB is the bytes of one of the table's MiB figures.
const MiB = 1 << 20

// ResponseRetention is ResponseRetentionDays as a duration.
const ResponseRetention = ResponseRetentionDays * 24 * time.Hour
