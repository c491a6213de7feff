package collector

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/aggregate"
	"github.com/statsblob/statsblob/voi"
)

// Defaults of Config: each bounds the memory or time a client can take.
const (
	DefaultMaxBody           = 65535 // the largest blob (cursz is a uint16)
	DefaultMaxAggregates     = 10000
	DefaultMaxTemplates      = 256
	DefaultMaxLabels         = export.DefaultMaxLabels
	DefaultMaxLabelBytes     = export.DefaultMaxLabelBytes
	DefaultLabelTTL          = time.Hour
	DefaultMaxConns          = 1024
	DefaultMaxHeaderBytes    = 16 << 10
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 20 * time.Second
	DefaultWriteTimeout      = 30 * time.Second
	DefaultIdleTimeout       = 90 * time.Second
	DefaultMaxScrapeSeries   = 1_000_000
	DefaultMaxScrapeBytes    = 128 << 20
	DefaultMaxScrapes        = 2
	DefaultScrapeShare       = 0.2
	DefaultQueueBytes        = aggregate.DefaultPendingBytes
	DefaultMaxLevelReadings  = 1 << 18                   // 262,144: 64 label sets of MaxLevelSenders, 26 senders of each of DefaultMaxAggregates
	DefaultMaxSequenceMarks  = aggregate.DefaultMaxMarks // 1,048,576: 10 label sets of each of aggregate.DefaultMaxSenders, 104 senders of each of DefaultMaxAggregates
)

// Limits names the limits as statsblob_collector_limit_hits_total labels
// them: each counts the requests (or connections, or scrapes) a limit
// refused or cut, or, for level_readings, the readings it evicted.
var Limits = []string{
	"connections",             // MaxConns: 503 and the connection closed
	"header_bytes",            // MaxHeaderBytes: 431
	"body_bytes",              // MaxBody: 413
	"labels",                  // MaxLabels: 400
	"label_bytes",             // MaxLabelBytes: 400
	"label_sets",              // MaxAggregates: 429
	"label_sets_per_template", // MaxAggregatesPerTemplate: 429
	"templates",               // MaxTemplates: 429 (a POST /v1/templates)
	"read_timeout",            // ReadTimeout while reading a body: 408
	"write_timeout",           // WriteTimeout: the response cut
	"scrapes",                 // MaxScrapes: 503
	"scrape_series",           // MaxScrapeSeries: aggregates left out of a scrape
	"scrape_bytes",            // MaxScrapeBytes: aggregates left out of a scrape
	"level_readings",          // MaxLevelReadings: a reading evicted, the least recently heard, for a new one
	"sequence_marks",          // MaxSequenceMarks: a post added without the duplicate check (for some label sets)
}

// withDefaults checks cfg's limits and fills in the defaults. Errors wrap
// voi.ErrInvalid.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Window < 0 || cfg.MaxBody < 0 || cfg.MaxAggregates < 0 || cfg.MaxAggregatesPerTemplate < 0 || cfg.MaxTemplates < 0 ||
		cfg.MaxLabels < 0 || cfg.MaxLabelBytes < 0 || cfg.MaxConns < 0 || cfg.MaxHeaderBytes < 0 ||
		cfg.ReadHeaderTimeout < 0 || cfg.ReadTimeout < 0 || cfg.WriteTimeout < 0 || cfg.IdleTimeout < 0 ||
		cfg.MaxScrapeSeries < 0 || cfg.MaxScrapeBytes < 0 || cfg.MaxScrapes < 0 || cfg.CheckpointInterval < 0 || cfg.History < 0 || cfg.QueueBytes < 0 ||
		cfg.MaxLevelReadings < 0 || cfg.MaxSequenceMarks < 0 || cfg.SequenceMarkAge < 0 {
		return cfg, fmt.Errorf("collector: negative window or limit: %w", voi.ErrInvalid)
	}
	if !(cfg.ScrapeShare >= 0 && cfg.ScrapeShare <= 1) {
		return cfg, fmt.Errorf("collector: scrape share %v outside [0, 1]: %w", cfg.ScrapeShare, voi.ErrInvalid)
	}
	orDefault(&cfg.ScrapeShare, DefaultScrapeShare)
	orDefault(&cfg.MaxBody, DefaultMaxBody)
	orDefault(&cfg.QueueBytes, DefaultQueueBytes)
	orDefault(&cfg.MaxLevelReadings, DefaultMaxLevelReadings)
	orDefault(&cfg.MaxSequenceMarks, DefaultMaxSequenceMarks)
	orDefault(&cfg.MaxAggregates, DefaultMaxAggregates)
	orDefault(&cfg.MaxAggregatesPerTemplate, cfg.MaxAggregates)
	orDefault(&cfg.MaxTemplates, DefaultMaxTemplates)
	orDefault(&cfg.MaxLabels, DefaultMaxLabels)
	orDefault(&cfg.MaxLabelBytes, DefaultMaxLabelBytes)
	orDefault(&cfg.MaxConns, DefaultMaxConns)
	orDefault(&cfg.MaxHeaderBytes, DefaultMaxHeaderBytes)
	orDefault(&cfg.MaxScrapeSeries, DefaultMaxScrapeSeries)
	orDefault(&cfg.MaxScrapeBytes, DefaultMaxScrapeBytes)
	orDefault(&cfg.MaxScrapes, DefaultMaxScrapes)
	orDefault(&cfg.LabelTTL, DefaultLabelTTL)
	orDefault(&cfg.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	orDefault(&cfg.ReadTimeout, DefaultReadTimeout)
	orDefault(&cfg.WriteTimeout, DefaultWriteTimeout)
	orDefault(&cfg.IdleTimeout, DefaultIdleTimeout)
	orDefault(&cfg.CheckpointInterval, DefaultCheckpointInterval)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return cfg, nil
}

// orDefault sets *v to d if it is zero (a Config field left unset).
func orDefault[T int | int64 | float64 | time.Duration](v *T, d T) {
	if *v == 0 {
		*v = d
	}
}

// limitHits is statsblob_collector_limit_hits_total.
func newLimitHits() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "statsblob_collector_limit_hits_total",
		Help: "Requests, connections or scrapes a limit refused or cut, by limit."}, []string{"limit"})
	for _, l := range Limits {
		c.WithLabelValues(l)
	}
	return c
}

// hit counts one refusal by limit.
func (s *Server) hit(limit string) { s.limitHits.WithLabelValues(limit).Inc() }

// freeIn is when a label set may next be freed: the window's end, or the
// next idle label set's expiry, or, when neither can happen, a minute.
func (s *Server) freeIn() time.Duration {
	now := s.cfg.Now()
	d := time.Duration(math.MaxInt64)
	if s.cfg.Window > 0 {
		d = s.set.Start().Add(s.cfg.Window).Sub(now)
	}
	if s.expiring() {
		if n := s.nextExpiry.Load(); n != 0 {
			d = min(d, time.Unix(0, n).Sub(now))
		} else {
			d = min(d, s.cfg.LabelTTL)
		}
	}
	if d == time.Duration(math.MaxInt64) {
		d = time.Minute
	}
	return d
}

// retryAfter is the value of a Retry-After header: whole seconds, at
// least 1.
func retryAfter(d time.Duration) string {
	sec := int64((d + time.Second - 1) / time.Second)
	return strconv.FormatInt(max(sec, 1), 10)
}
