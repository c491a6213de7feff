package export_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/otelexport"
	"github.com/statsblob/statsblob/export/promexport"
	"github.com/statsblob/statsblob/tpl"
)

// readmeExport is the README's Go snippet of the Collector section, with
// the names it uses as parameters, so that it compiles (it is not run: it
// registers with Prometheus's default registry).
func readmeExport(snap *blob.Blob, t *tpl.Template, otlpExporter sdkmetric.Exporter) *sdkmetric.PeriodicReader {
	src := export.SourceFunc(func() []export.Named { // called at every scrape or collection
		return []export.Named{{Blob: snap, Template: t, Labels: []export.Label{{Name: "host", Value: "web1"}}}}
	})
	pc, _ := promexport.New(src, export.Options{Units: map[string]string{"TCP_RTT": "microseconds"}})
	prometheus.MustRegister(pc) // an unchecked collector of const metrics
	op, _ := otelexport.New(src, otelexport.Config{Temporality: metricdata.DeltaTemporality})
	reader := sdkmetric.NewPeriodicReader(otlpExporter, sdkmetric.WithProducer(op))
	return reader
}

// TestREADMEExport: the README's export snippet is readmeExport's body as
// written (without its return), so it compiles and cannot rot.
func TestREADMEExport(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	src, err := os.ReadFile("readme_test.go")
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(readme), "In Go, over any source of blobs:\n\n```go\n")
	require.True(t, ok, "README has no export snippet")
	snippet, _, ok := strings.Cut(after, "```\n")
	require.True(t, ok)
	_, body, ok := strings.Cut(string(src), "otlpExporter sdkmetric.Exporter) *sdkmetric.PeriodicReader {\n")
	require.True(t, ok)
	body, _, ok = strings.Cut(body, "\treturn reader\n")
	require.True(t, ok)
	var want strings.Builder
	for _, line := range strings.SplitAfter(body, "\n") {
		want.WriteString(strings.TrimPrefix(line, "\t"))
	}
	require.Equal(t, want.String(), snippet)
	_ = readmeExport
}

// TestIngestFigure: the ingest listener's rate the README and the docs
// cite is bench/README.md's measured one. They had drifted apart: the
// collector's doc said "past 50,000 a second per core" (the target),
// the README "past 60,000 per CPU second" and elsewhere 57,000–64,000.
func TestIngestFigure(t *testing.T) {
	read := func(file string) string {
		t.Helper()
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		s := strings.ReplaceAll(string(b), "\n// ", " ") // a doc comment's lines joined
		return strings.Join(strings.Fields(s), " ")
	}
	m := regexp.MustCompile(`\*\*The ingest listener: ([0-9,]+–[0-9,]+ single posts per CPU second)`).FindStringSubmatch(read("../bench/README.md"))
	require.NotNil(t, m, "bench/README.md states the ingest listener's rate")
	other := regexp.MustCompile(`past [0-9,]+ (a|per) (second per core|CPU second)`)
	for _, file := range []string{"../README.md", "cmd/statsblob-collector/main.go", "collector/ingestserver.go"} {
		text := read(file)
		require.True(t, strings.Contains(text, m[1]), "%s does not cite %q", file, m[1])
		require.Empty(t, other.FindString(text), "%s cites another figure", file)
	}
}
