package collector

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export/aggregate"
	"github.com/statsblob/statsblob/export/internal/hashfmt"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// BatchMagic starts every batch body.
const BatchMagic = "SBB1"

// MaxBatchBody is the largest batch body, in bytes.
const MaxBatchBody = 16 << 20

// DecodeBatch reads a batch body, the framing POST /v1/batch takes: the
// four bytes BatchMagic, then frames until the body ends, each
//
//	uint16 little-endian  length of the labels (at most 65535 bytes)
//	labels                the blob's labels in URL query syntax ("host=web1&svc=api"), may be empty
//	uint16 little-endian  length of the blob (1 to 65535 bytes: a blob's cursz is a uint16)
//	blob                  the blob's bytes
//
// It calls frame for each frame in order with the frame's index, labels
// and blob (slices of body: copy what is kept) and stops at the first
// error frame returns, which it returns. A body that is not such a
// sequence (no magic, a frame cut short, an empty blob) gives an error
// wrapping voi.ErrInvalid that names the frame and its offset; frame has
// then been called for the frames before it.
func DecodeBatch(body []byte, frame func(i int, labels string, blob []byte) error) error {
	if len(body) < len(BatchMagic) || string(body[:len(BatchMagic)]) != BatchMagic {
		return fmt.Errorf("collector: batch: does not start with %q: %w", BatchMagic, voi.ErrInvalid)
	}
	p := body[len(BatchMagic):]
	off := len(BatchMagic)
	for i := 0; len(p) > 0; i++ {
		if len(p) < 2 {
			return fmt.Errorf("collector: batch: frame %d at %d: labels length cut short: %w", i, off, voi.ErrInvalid)
		}
		ql := int(binary.LittleEndian.Uint16(p))
		if len(p) < 2+ql+2 {
			return fmt.Errorf("collector: batch: frame %d at %d: %d bytes of labels and a blob length, %d left: %w", i, off, ql, len(p)-2, voi.ErrInvalid)
		}
		labels := string(p[2 : 2+ql])
		bl := int(binary.LittleEndian.Uint16(p[2+ql:]))
		if bl == 0 || len(p) < 4+ql+bl {
			return fmt.Errorf("collector: batch: frame %d at %d: blob of %d bytes, %d left: %w", i, off, bl, len(p)-4-ql, voi.ErrInvalid)
		}
		if err := frame(i, labels, p[4+ql:4+ql+bl]); err != nil {
			return err
		}
		p = p[4+ql+bl:]
		off += 4 + ql + bl
	}
	return nil
}

// AppendBatchFrame appends to dst one frame of DecodeBatch's framing (the
// caller starts the body with BatchMagic). Errors wrap voi.ErrInvalid:
// labels over 65535 bytes, a blob empty or over 65535 bytes.
func AppendBatchFrame(dst []byte, labels string, blob []byte) ([]byte, error) {
	if len(labels) > 0xffff || len(blob) == 0 || len(blob) > 0xffff {
		return dst, fmt.Errorf("collector: batch frame of %d bytes of labels and %d of blob: %w", len(labels), len(blob), voi.ErrInvalid)
	}
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(labels)))
	dst = append(dst, labels...)
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(blob)))
	return append(dst, blob...), nil
}

// errRefused carries a rejection through aggregate.Set.Once.
var errRefused = errors.New("refused")

// once runs add for the post r, made at time at (durably), whose blobs go
// to the aggregates of keys: when r carries aggregate.HeaderSender and
// HeaderSeq, add is told which keys' blobs were added before
// (aggregate.Set.OnceAllAt, the marks taking time at: a post all of whose
// blobs were is answered as accepted without calling add); when it
// carries neither, add adds everything.
func (s *Server) once(r *post, at time.Time, keys []string, add func(skip []bool) *rejection) *rejection {
	id, seqv := r.sender, r.seq
	if id == "" && seqv == "" {
		return add(make([]bool, len(keys)))
	}
	if id == "" || seqv == "" {
		return reject(http.StatusBadRequest, "sender", "%s and %s go together", aggregate.HeaderSender, aggregate.HeaderSeq)
	}
	if err := aggregate.CheckSender(id); err != nil {
		return reject(http.StatusBadRequest, "sender", "%v", err)
	}
	seq, err := aggregate.ParseSeq(seqv)
	if err != nil {
		return reject(http.StatusBadRequest, "sender", "%v", err)
	}
	var rej *rejection
	if _, err := s.set.OnceAllAt(id, keys, seq, at, func(skip []bool) error {
		if rej = add(skip); rej != nil {
			return errRefused
		}
		return nil
	}); err != nil && rej == nil {
		return reject(http.StatusInternalServerError, "sender", "%v", err)
	}
	return rej
}

// aggregateMetrics are the counters and the gauge of the aggregate.Set's
// Stats.
func (s *Server) aggregateMetrics() []prometheus.Collector {
	stat := func(f func(aggregate.Stats) float64) func() float64 {
		return func() float64 { return f(s.set.Stats()) }
	}
	counter := func(name, help string, f func(aggregate.Stats) float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, stat(f))
	}
	return []prometheus.Collector{
		counter("statsblob_collector_saturated_total",
			"Statistics of an aggregate that saturated at their 64-bit limit (each also counted in the statistic's errors).",
			func(st aggregate.Stats) float64 { return float64(st.Saturated) }),
		counter("statsblob_collector_duplicates_total",
			"Posts answered 204 without being added again: their sender's sequence number was already added.",
			func(st aggregate.Stats) float64 { return float64(st.Duplicates) }),
		counter("statsblob_collector_untracked_senders_total",
			"Posts with a sender id added without the duplicate check, or some of a batch's blobs: more senders (100,000), or more senders' numbers (-max-sequence-marks), than the collector keeps.",
			func(st aggregate.Stats) float64 { return float64(st.Untracked) }),
		counter("statsblob_collector_sequence_marks_evicted_total",
			"Senders' sequence numbers dropped at a window's close before -sequence-mark-age: the label sets they were of, none posted to in the window closed, passed twice -max-aggregates (label sets cycling through short windows). A retry of their posts would be added again.",
			func(st aggregate.Stats) float64 { return float64(st.MarksEvicted) }),
		counter("statsblob_collector_folds_total",
			"Folds of an aggregate's queued blobs into the aggregate (a full batch, the queue budget -queue-bytes passed, or a scrape).",
			func(st aggregate.Stats) float64 { return float64(st.Folds) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "statsblob_collector_queued_bytes",
			Help: "Bytes of accepted blobs queued, not yet folded into their aggregates, or folded since but held by the checkpoint being written (bounded by -queue-bytes)."},
			stat(func(st aggregate.Stats) float64 { return float64(st.PendingBytes) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "statsblob_collector_sequence_marks",
			Help: "Senders' sequence numbers kept for the duplicate check, one per sender and label set (bounded by -max-sequence-marks)."},
			stat(func(st aggregate.Stats) float64 { return float64(st.Marks) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "statsblob_collector_level_readings",
			Help: "Senders' latest levels kept, one per sender and label set (bounded by -max-level-readings)."},
			func() float64 { return float64(s.levels.readings()) }),
	}
}

// acceptBatch handles one batch post: every frame is checked (labels,
// blob, template, layout, the aggregate limit) before any is added, so a
// refused batch adds nothing.
func (s *Server) acceptBatch(r *post) *rejection {
	if r.method != http.MethodPost {
		return reject(http.StatusMethodNotAllowed, "method", "method %s not allowed: POST a batch", r.method)
	}
	g, rej := s.poster(r.auth)
	if rej != nil {
		return rej
	}
	bb := getBodyBuf()
	defer putBodyBuf(bb)
	limit, flag := s.postLimit(true)
	body, rej := s.readBodyWithin(r, limit, flag, bb)
	if rej != nil {
		return rej
	}
	var items []aggregate.Item
	var frames []frame                    // for the log
	ref := map[*tpl.Template]*blob.Blob{} // a checked blob of each template in the batch
	// Frames share their labels' parse (queries too long for the label
	// cache would be parsed frame by frame) and, by template, their
	// admission and key: a batch's frames mostly have the same labels.
	parsed := map[string]*cachedLabels{} // by frame query
	type admitted struct {
		cl *cachedLabels
		t  *tpl.Template
	}
	keyed := map[admitted]aggregate.Item{}
	err := DecodeBatch(body, func(i int, query string, p []byte) error {
		cl := parsed[query]
		if cl == nil {
			q := r.query
			if query != "" && q != "" {
				q += "&" + query
			} else if query != "" {
				q = query
			}
			var lrej *rejection
			if cl, lrej = s.labels(q); lrej != nil {
				rej = lrej
				rej.msg = fmt.Sprintf("frame %d: %s", i, rej.msg)
				return errRefused
			}
			parsed[query] = cl
		}
		b, err := blob.FromBytes(p, nil)
		if err != nil {
			rej = reject(http.StatusBadRequest, "blob", "frame %d: %v", i, err)
			return errRefused
		}
		t, err := s.lookup(b.TplHash())
		if err != nil {
			rej = reject(http.StatusUnprocessableEntity, "template", "frame %d: unknown template hash %s", i, hashfmt.String(b.TplHash()))
			return errRefused
		}
		it, ok := keyed[admitted{cl, t}]
		if !ok {
			labels, lrej := g.admit(t, cl.labels)
			if lrej != nil {
				rej = lrej
				rej.msg = fmt.Sprintf("frame %d: %s", i, rej.msg)
				return errRefused
			}
			it = aggregate.Item{Key: cl.keyOf(b.TplHash(), labels), T: t, Labels: labels}
			keyed[admitted{cl, t}] = it
		}
		if c := ref[t]; c != nil {
			err = blob.Compatible(c, b)
		} else if err = b.CheckTemplate(t); err == nil {
			ref[t] = b
		}
		if err != nil {
			rej = reject(http.StatusUnprocessableEntity, "layout", "frame %d: blob does not fit its template (hash %s): %v", i, hashfmt.String(t.Hash()), err)
			return errRefused
		}
		it.B = b
		items = append(items, it)
		frames = append(frames, frame{labels: it.Labels, blob: p})
		return nil
	})
	if rej != nil {
		return rej
	}
	if err != nil {
		return reject(http.StatusBadRequest, "batch", "%v", err)
	}
	keys := make([]string, len(items))
	for i, it := range items {
		keys[i] = it.Key
	}
	rec := func(at time.Time) *record { return newRecord(r, frames, at) }
	var added tally
	rej = s.durably(rec, func(at time.Time) *rejection { return s.addBatch(r, at, keys, items, &added) })
	if rej == nil {
		s.countAccepted(added)
	}
	return rej
}

// addBatch adds a checked batch's items (acceptBatch), posted at time
// at, and sets *added to what it added (counted once the batch is
// acknowledged: countAccepted).
func (s *Server) addBatch(r *post, at time.Time, keys []string, items []aggregate.Item, added *tally) *rejection {
	return s.once(r, at, keys, func(skip []bool) *rejection {
		add := items[:0:0]
		for i, it := range items {
			if !skip[i] {
				add = append(add, it)
			}
		}
		if err := s.set.AddAllAt(add, at); err != nil {
			return s.addRejection(err, items[0].T)
		}
		n := 0
		for _, it := range add {
			n += it.B.CurSz()
			s.levels.record(it.T, it.Labels, r.header, at, it.B)
		}
		*added = tally{blobs: len(add), bytes: n}
		return nil
	})
}

// renderText renders GET /metrics in the Prometheus text format: the
// aggregates through promexport.Text (each aggregate rendered again only
// when it changed) within the scrape bounds, the server's own metrics from
// its registry; gzipped when the client accepts it.
func (s *Server) renderText(w http.ResponseWriter, r *http.Request) {
	own, err := s.own.Gather()
	if err != nil {
		http.Error(w, "gathering the collector's metrics failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	var out io.Writer = w
	if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		w.Header().Set("Content-Encoding", "gzip")
		gz := gzipPool.Get().(*gzip.Writer)
		gz.Reset(w)
		defer func() {
			_ = gz.Close()
			gzipPool.Put(gz)
		}()
		out = gz
	}
	om, _ := s.text.WriteWithin(out, own, s.cfg.MaxScrapeSeries, s.cfg.MaxScrapeBytes)
	s.noteOmitted(om.BySeries, om.ByBytes)
	if om.Clashes > 0 {
		args := []any{"metrics", om.Clashes}
		if om.FirstClash != nil {
			args = append(args, "first", om.FirstClash)
		}
		s.warn("scrape: metrics left out: their names and labels clash with another template's or the collector's own", args...)
	}
}

// gzipPool holds the scrapes' compressors (fastest level: a scrape of
// 10,000 aggregates is tens of MB). klauspost/compress's gzip, already the
// collector's zstd decoder: its fastest level costs a quarter of the
// standard library's on such a scrape (BenchmarkScrape10k/gzip: 110 ->
// 87 ms with the rendering) for 2 % fewer bytes.
var gzipPool = sync.Pool{New: func() any {
	gz, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return gz
}}
