// Package export maps statsblob blobs onto metrics that Prometheus and
// OpenTelemetry understand. It is the shared half of the exporters: a Mapper
// turns one blob (with its template, for names, and constant labels) into
// neutral Metrics; package promexport makes Prometheus const metrics of
// them, package otelexport OpenTelemetry metricdata, package remotewrite
// Prometheus remote write requests (promexport.Text also writes the text
// exposition directly), package aggregate adds received blobs up per
// template and label set (in the template's wide form, tpl.Widen), and
// package collector serves them all for blobs received over HTTP.
//
// # Names
//
// A VOI's metrics are named NAMESPACE_TEMPLATE_VOI_UNIT (empty parts left
// out), each part sanitised (Sanitize: lower case, [a-z0-9_] only), followed
// by the statistic's suffix below. VOIs whose names would meet in an
// exposition after sanitising get their VOI id appended. A blob without a
// template is named by its hash and VOI ids (tpl_1a2b3c4d_voi3). The unit
// (Options.Units) is written as Prometheus's word for it (PromUnit: "us" is
// "microseconds").
//
// Under the OpenTelemetry convention (Options.Convention; package
// otelexport uses it), the names of OpenTelemetry's semantic conventions:
// NAMESPACE.TEMPLATE.VOI, each part lower case with [a-z0-9_] only, then
// .max, .min, .hist, .hist.out_of_range or .tdigest; no unit in the name,
// the unit beside it as a UCUM code (UCUM: "microseconds" is "us", and
// every spelling tpl.ParseUnit reads has its code: "sec" is "s"), counts
// of values in unit "{value}"; t-digests are exponential histograms (the
// native histogram below) unless Options.Summary asks for summaries.
//
// # The mapping, and why each is exact or not
//
// "Exact" means: the exported numbers are the blob's numbers, and the
// histogram bounds describe exactly the values the C's lookup put in each
// bucket. Numbers are float64, so integers beyond 2^53 (and Q numbers with
// more than 53 significant bits) round.
//
//	statistic              metric                                       name suffix
//	SUM, unsigned VOI      counter (OTel monotonic Sum)                 (none; Prometheus adds _total)
//	SUM, signed VOI        gauge (OTel non-monotonic Sum)               (none)
//	MAX, MIN               gauge                                        _max, _min
//	CRHIST                 histogram                                    _hist
//	DRHIST, DVHIST         histogram if contiguous, else counters       _hist, _hist_outofrange
//	                       with a bucket label; out-of-range counter
//	TDGST                  summary: quantiles, count, sum               _tdigest
//	TDGST (option)         native / exponential histogram               _tdigest_native
//	TDGST (OpenTelemetry)  exponential histogram (option: summary)      .tdigest
//
// SUM, MAX, MIN: exact; the value of the statistic. MAX and MIN are left out
// until the VOI was updated (they start at the type's extremes).
//
// CRHIST: exact. The C counts v in bucket i when lb[i] <= v < lb[i+1] (the
// last bucket takes everything from its lower bound up), and values below
// lb[0] in the out-of-band counter. VOI values are integers or Q numbers,
// so "v < lb[i+1]" is "v <= lb[i+1] - one unit" with one unit = 1 for
// integers and 2^-prec for Q numbers of precision prec: bucket i gets
// le = lb[i+1] - unit, the last bucket le = +Inf, and the out-of-band count
// becomes the first bucket, le = lb[0] - unit (left out when lb[0] is the
// type's minimum, so nothing can be below it). This needs strictly ascending
// lower bounds (all generated schemes; user buckets may be unsorted) and,
// for Q VOIs, one precision for every bound and value (the C compares Q
// fractions raw); otherwise the buckets are exported as counters.
//
// DRHIST: exact when the ranges are contiguous (ub[i] = lb[i+1]): bucket i
// holds lb[i] <= v < ub[i], so le = ub[i] - unit, with an empty bucket at
// lb[0] - unit so that interpolation starts at lb[0]. Values outside every
// range (below lb[0] or from ub[last] up) are one out-of-band count in the
// C, so the histogram counts the values in range and the _hist_outofrange
// counter the rest. Other layouts: one counter per bucket, labelled
// bucket="[lb,ub)", each exact (lb and ub in the exported unit when
// metadata scales the VOI, as exact decimals where they have one).
//
// DVHIST: exact when the values are consecutive integers: bucket i holds
// exactly v = val[i], so le = val[i], with an empty bucket at val[0] - 1
// and the out-of-band count apart, as for DRHIST. Other layouts (and every Q
// VOI: the C matches Q values by integer part) are counters labelled
// bucket="VALUE", each exact.
//
// Histogram sum: a blob's histogram keeps no sum. When the VOI also keeps a
// SUM, every value the histogram counted went into that SUM and no other
// value did (CRHIST always, DRHIST/DVHIST when nothing was out of range), and
// no update counted an error, the SUM is the exact histogram sum; otherwise
// the sum is NaN rather than a guess, except that a histogram that counted
// no value (all out of range) has sum 0, the sum of no values, as
// OpenTelemetry requires. Likewise the VOI's MIN and MAX become
// the OpenTelemetry histogram's min and max.
//
// TDGST: the count is exact (the sum of the centroid counts). The sum is
// exact when the VOI also keeps a SUM and no update of either counted an
// error (the SUM saw exactly the digest's samples); otherwise it is the
// digest's, the centroid means times their counts, an estimate: the means
// are rounded to the digest's precision, and a merge (tdigest.MergeAll)
// spreads heavy centroids towards their neighbours before regrouping, which
// moves the sum by about 1% on the demo's fleet. The quantiles
// are blob.Stat.Quantile's estimates (tdigest.Quantile; when the VOI keeps
// MIN and MAX, tdigest.QuantileBounded clamped to [MIN, MAX]; an integer
// VOI's rounded to an integer), as accurate as the digest: their rank
// error is the digest's.
// OpenTelemetry asks summary quantiles to be non-negative: a signed VOI's
// negative quantiles are sent as they are.
//
// TDGST as a native histogram (Options.NativeHistogram; OpenTelemetry's
// exponential histogram): an estimate. The bucket counts are the digest's
// CDF at the bucket bounds as blob.Stat.CDF answers it (bounded by MIN and
// MAX when the VOI keeps them; an integer VOI's at the bound's integer part
// plus 1/2) times the count, rounded so that they add up to the count
// exactly (a positive bucket i holds (base^i, base^(i+1)], a negative one
// [-base^(i+1), -base^i): values go by magnitude, as OpenTelemetry and
// Prometheus map them); buckets span the centroid means and reach out to MIN and MAX
// (the CDF interpolates out to them, so a MIN below zero puts samples
// below zero even when no mean is), zero threshold 0. The
// scale (Options.NativeScale 0) is the finest, up to 8, whose buckets are no
// wider than the ratio of any two neighbouring centroid means: every bucket
// bound then falls between neighbouring centroids, so a quantile read from
// the buckets is off by at most one bucket (a relative 2^(2^-scale) - 1)
// from the digest's own interpolation; where the means span more than
// MaxNativeBuckets buckets at that scale it is lowered, and the bucket
// width is the error.
//
// # Time
//
// Every metric starts (Prometheus created timestamp, OpenTelemetry start
// time) at the blob's last reset, or at Named.Start when the source knows
// better (the collector's window start).
package export
