package collector

import "github.com/prometheus/client_golang/prometheus/testutil"

// LimitHits reads statsblob_collector_limit_hits_total{limit} without a
// scrape (Gather maps every aggregate).
func LimitHits(s *Server, limit string) float64 {
	return testutil.ToFloat64(s.limitHits.WithLabelValues(limit))
}

// ScrapesWriting returns the scrapes rendered and being written.
func ScrapesWriting(s *Server) int64 { return s.writing.Load() }

// Omitted reads statsblob_collector_scrape_omitted_aggregates without a
// scrape.
func Omitted(s *Server) float64 { return testutil.ToFloat64(s.omitted) }

// Crash leaves s as kill -9 leaves a collector: its log as it is (every
// acknowledged record is written already), no checkpoint, DataDir's lock
// released, so that a new Server may open DataDir.
func Crash(s *Server) {
	if s.log != nil {
		_ = s.log.Close()
	}
	if s.lock != nil {
		s.lock.Close()
	}
}

// QueuedBytes reads statsblob_collector_queued_bytes without a scrape
// (which folds queues).
func QueuedBytes(s *Server) int64 { return s.set.Stats().PendingBytes }

// SequenceMarks is how many sequence marks the server keeps.
func SequenceMarks(s *Server) int { return s.set.Stats().Marks }

// WithDiskFault returns cfg whose DataDir log's disk fails as fault says
// (wal.Options.Fault): before each write ("write") and fsync ("sync") of
// a file of the log, named seg-N.wal or ckpt-N.ckpt.
func WithDiskFault(cfg Config, fault func(op, file string) error) Config {
	cfg.diskFault = fault
	return cfg
}

// PushQueue is how many closed windows p has yet to push (delta; the one
// being pushed among them).
func PushQueue(p *Pusher) int {
	p.qmu.Lock()
	defer p.qmu.Unlock()
	return len(p.queue)
}

// LogFailures reads statsblob_collector_log_failures_total and
// _log_heals_total without a scrape.
func LogFailures(s *Server) (failures, heals int) {
	return int(testutil.ToFloat64(s.logFailures)), int(testutil.ToFloat64(s.logHeals))
}
