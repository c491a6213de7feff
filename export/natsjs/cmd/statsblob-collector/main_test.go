package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/export/natsjs"
	"github.com/statsblob/statsblob/export/natsjs/internal/natstest"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// TestTemplateSetReload: SIGHUP's load adds the file's new templates,
// keeps those known (a template once known stays known), and a file it
// cannot parse changes nothing. Before, the collector read its templates
// once: the messages waiting for a template waited until a restart.
func TestTemplateSetReload(t *testing.T) {
	mk := func(name, voiName string) *tpl.Template {
		tp, err := tpl.NewRegistry().New(name)
		require.NoError(t, err)
		require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: voiName, DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
		return tp
	}
	v1, v2, other := mk("REQ", "requests"), mk("REQ", "calls"), mk("OTHER", "x")
	file := filepath.Join(t.TempDir(), "templates.json")
	write := func(ts ...*tpl.Template) {
		b, err := json.Marshal(ts)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(file, b, 0o644))
	}
	s := &natsjs.TemplateSet{}
	write(v1)
	n, err := loadTemplates(s, file)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	_, err = s.ByHash(v2.Hash())
	require.ErrorIs(t, err, voi.ErrNoTemplate)

	write(v2, other) // REQ's new version, and a new template
	n, err = loadTemplates(s, file)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	for _, tp := range []*tpl.Template{v1, v2, other} {
		got, err := s.ByHash(tp.Hash())
		require.NoError(t, err)
		require.Equal(t, tp.Name(), got.Name())
	}
	n, err = loadTemplates(s, file)
	require.NoError(t, err)
	require.Zero(t, n)

	require.NoError(t, os.WriteFile(file, []byte("{"), 0o644))
	_, err = loadTemplates(s, file)
	require.Error(t, err)
	require.Len(t, s.Templates(), 3)

	// Both versions of a name in one file, as the HTTP collector reads
	// them (before, one registry for the file refused the second).
	s = &natsjs.TemplateSet{}
	write(v1, v2)
	n, err = loadTemplates(s, file)
	require.NoError(t, err)
	require.Equal(t, 2, n)
}

// TestUsage: -h prints to stdout (as every statsblob COMMAND -h does),
// exit 0; a usage error goes to stderr with the synopsis, exit 2.
// Before, -h went to stderr ("statsblob-collector -h | less" showed
// nothing) and a -lease below natsjs.MinLeaseTTL was taken: the
// consumer's renewal ticker of a quarter lease, 0 for -lease 3ns,
// panicked in time.NewTicker once the stream was reached.
func TestUsage(t *testing.T) {
	const synopsis = "usage: statsblob-collector -templates FILE [-nats URLS] [-stream NAME] [-listen ADDR] [flags]\n"
	const hint = synopsis + "Run 'statsblob-collector -h' for help.\n"
	f := func(want int, wantOut, wantErr string, args ...string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		require.Equal(t, want, run(context.Background(), args, &stdout, &stderr), stderr.String())
		if want == 0 {
			require.Contains(t, stdout.String(), wantOut)
		} else {
			require.Equal(t, wantOut, stdout.String())
		}
		require.Equal(t, wantErr, stderr.String())
	}
	f(0, synopsis+"\nflags:\n  -checkpoint D\n", "", "-h")
	f(0, "  -lease D\n    \thow long a killed collector's partitions stay its (SIGTERM hands them back at once) (D, at least 1s) (default 10s)\n", "", "-h")
	f(2, "", "statsblob-collector: flag provided but not defined: -nope\n"+hint, "-nope")
	f(2, "", "statsblob-collector: -templates FILE is required, and no arguments\n"+hint)
	f(2, "", "statsblob-collector: -lease 3ns: want at least 1s\n"+hint, "-templates", "none.json", "-lease", "3ns")
	f(2, "", "statsblob-collector: -lease 999ms: want at least 1s\n"+hint, "-templates", "none.json", "-lease", "999ms")
	f(2, "", "statsblob-collector: -lease 0s: want at least 1s\n"+hint, "-templates", "none.json", "-lease", "0")
	// A tiny -checkpoint or -template-retry made a partition's loop
	// spin (a state stored, or a waiting message read, on every turn):
	// before, both were taken.
	f(0, "  -checkpoint D\n    \thow often partition states are stored and messages acknowledged (D, at least 100ms and at most half -lease; unset, a quarter of -lease if that is shorter) (default 2s)\n", "", "-h")
	f(0, "  -template-retry D\n    \thow often messages of an unknown template are tried again (D, at least 100ms) (default 10s)\n", "", "-h")
	f(2, "", "statsblob-collector: -checkpoint 1ns: want at least 100ms\n"+hint, "-templates", "none.json", "-checkpoint", "1ns")
	f(2, "", "statsblob-collector: -checkpoint 0s: want at least 100ms\n"+hint, "-templates", "none.json", "-checkpoint", "0")
	f(2, "", "statsblob-collector: -checkpoint -1s: want at least 100ms\n"+hint, "-templates", "none.json", "-checkpoint", "-1s")
	f(2, "", "statsblob-collector: -template-retry 1ns: want at least 100ms\n"+hint, "-templates", "none.json", "-template-retry", "1ns")
	f(2, "", "statsblob-collector: -template-retry 99ms: want at least 100ms\n"+hint, "-templates", "none.json", "-template-retry", "99ms")
	f(2, "", "statsblob-collector: -template-retry 0s: want at least 100ms\n"+hint, "-templates", "none.json", "-template-retry", "0")
	// A -checkpoint over half -lease had every message redelivered
	// before its acknowledgement; unset, it follows a short -lease.
	f(2, "", "statsblob-collector: -checkpoint 3s: want at most half -lease (5s): messages are acknowledged at checkpoints, and redelivered if not within the lease\n"+hint,
		"-templates", "none.json", "-lease", "5s", "-checkpoint", "3s")
	var stdout, stderr bytes.Buffer
	require.Equal(t, 1, run(context.Background(), []string{"-templates", "none.json", "-lease", "1s", "-checkpoint", "100ms", "-template-retry", "100ms"}, &stdout, &stderr), "past the checks")
	require.Equal(t, 1, run(context.Background(), []string{"-templates", "none.json", "-lease", "1s"}, &stdout, &stderr), "past the checks: -checkpoint unset is 250ms")
}

// TestUsageZero: every numeric flag refuses 0 and negative values as a
// usage error (the rule of the HTTP command's TestUsageZero: 0 is either
// stated in -h or refused; here no flag has a 0 of its own). Before,
// -partitions, -replicas, -max-sequence-marks and -max-waiting took 0
// or a negative value quietly for their default (natsjs's 0 or less):
// "-partitions 0" ran with 16 partitions, "-max-waiting 0" let 65,536
// messages wait.
func TestUsageZero(t *testing.T) {
	var help bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"-h"}, &help, io.Discard))
	flags := regexp.MustCompile(`(?m)^  -(\S+)(?: \S+)?\n    \t(.*)$`).FindAllStringSubmatch(help.String(), -1)
	require.Greater(t, len(flags), 10)
	none := filepath.Join(t.TempDir(), "none.json")
	try := func(name, v string) (int, string) {
		var stderr bytes.Buffer
		code := run(context.Background(), []string{"-templates", none, "-" + name, v}, io.Discard, &stderr)
		return code, stderr.String()
	}
	var numeric []string
	for _, m := range flags {
		name := m[1]
		if _, stderr := try(name, "x"); !strings.Contains(stderr, `invalid value "x" for flag -`+name+`: parse error`) {
			continue // not a number
		}
		numeric = append(numeric, name)
		for _, v := range []string{"0", "-1"} {
			code, stderr := try(name, v)
			if strings.Contains(stderr, "parse error") {
				code, stderr = try(name, v+"s") // a duration
			}
			require.Equal(t, 2, code, "-%s %s: %s", name, v, stderr)
			require.Regexp(t, `^statsblob-collector: -`+name+` `+v+`\S*: (must be positive|want at least \S+)\n`, stderr)
		}
	}
	require.Equal(t, []string{"checkpoint", "lease", "max-age", "max-sequence-marks", "max-state", "max-waiting", "partitions", "replicas", "template-retry"}, numeric)
	code, stderr := try("partitions", "1")
	require.Equal(t, 1, code, "past the checks, to the missing file")
	require.Contains(t, stderr, "no such file")
}

// TestStreamSized: -max-age and -max-state size the stream and the
// partition states' bucket, and a -max-state past the server's
// max_payload is logged at start. Before, neither flag existed: the
// README told operators to size the stream's retention (Setup.MaxAge),
// but every collector's start set it back to 24 hours, and a state past
// the server's max_payload (1 MiB on a server without a configuration)
// was first heard of when its checkpoints failed.
func TestStreamSized(t *testing.T) {
	c := natstest.Start(t, 1) // max_payload 8 MiB
	nc, err := nats.Connect(c.URL())
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "templates.json")
	require.NoError(t, os.WriteFile(file, []byte("[]"), 0o644))

	ctx, cancel := context.WithCancel(context.Background())
	var stderr bytes.Buffer
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"-nats", c.URL(), "-templates", file, "-listen", "127.0.0.1:0", "-lease", "1s",
			"-max-age", "72h", "-max-state", "16777216"}, io.Discard, &stderr)
	}()
	var bucket jetstream.KeyValueStatus
	exited := -1
	require.Eventually(t, func() bool {
		select {
		case exited = <-done:
			return true
		default:
		}
		kv, err := js.KeyValue(ctx, "STATSBLOB_state")
		if err != nil {
			return false
		}
		bucket, err = kv.Status(ctx)
		return err == nil
	}, 10*time.Second, 50*time.Millisecond)
	if exited != -1 {
		t.Fatalf("run returned %d: %s", exited, stderr.String())
	}
	st, err := js.Stream(ctx, "STATSBLOB")
	require.NoError(t, err)
	require.Equal(t, 72*time.Hour, st.CachedInfo().Config.MaxAge)
	require.Equal(t, int32(16<<20), bucket.(*jetstream.KeyValueBucketStatus).StreamInfo().Config.MaxMsgSize)
	cancel()
	require.Equal(t, 0, <-done)
	require.Contains(t, stderr.String(), "the server takes messages of at most 8388608 bytes (its max_payload), -max-state is 16777216: a partition state past 8388608 bytes cannot be stored (raise max_payload in the server's configuration)\n")
}

// syncBuffer is a bytes.Buffer for a log written while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestReadyz: /readyz tells whether the collector works with the stream
// (503 and why while the stream is unreachable, at start or later; 200
// once it is reached), /healthz is 200 throughout, and /metrics has the
// collector's own metrics from the start. Before, there was no /readyz,
// /healthz said "ok" while the stream was unreachable, and /metrics had
// no statsblob_nats_ series until the consumer was made (not even
// statsblob_nats_partitions_owned 0).
func TestReadyz(t *testing.T) {
	c := natstest.Start(t, 1)
	url := c.URL()
	c.StopNode(0) // unreachable at start
	file := filepath.Join(t.TempDir(), "templates.json")
	require.NoError(t, os.WriteFile(file, []byte("[]"), 0o644))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"-nats", url, "-templates", file, "-listen", "127.0.0.1:0", "-lease", "1s"}, io.Discard, &stderr)
	}()
	serving := regexp.MustCompile(`serving on (\S+)\n`)
	var addr string
	require.Eventually(t, func() bool {
		m := serving.FindStringSubmatch(stderr.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	}, 10*time.Second, 10*time.Millisecond)
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	metricLines := func() []string {
		_, body := get("/metrics")
		var own []string
		for _, l := range strings.Split(body, "\n") {
			if strings.HasPrefix(l, "statsblob_nats_partitions_owned ") || strings.HasPrefix(l, "statsblob_nats_messages_total{outcome=\"merged\"}") {
				own = append(own, l)
			}
		}
		return own
	}
	readyIs := func(status int, prefix string) {
		t.Helper()
		var got string
		require.Eventually(t, func() bool {
			code, body := get("/readyz")
			got = fmt.Sprint(code, " ", body)
			return code == status && strings.HasPrefix(body, prefix)
		}, 15*time.Second, 20*time.Millisecond, "last /readyz: %s", &got)
		code, body := get("/healthz")
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, "ok\n", body)
	}

	readyIs(http.StatusServiceUnavailable, "stream STATSBLOB not ready: ")
	require.Equal(t, []string{`statsblob_nats_messages_total{outcome="merged"} 0`, "statsblob_nats_partitions_owned 0"}, metricLines())

	c.StartNode(0)
	readyIs(http.StatusOK, "ready\n")
	require.Eventually(t, func() bool { return metricLines()[1] == "statsblob_nats_partitions_owned 16" }, 10*time.Second, 20*time.Millisecond)

	c.StopNode(0) // unreachable later
	readyIs(http.StatusServiceUnavailable, "natsjs: not ready: the stream's buckets are unreachable: heartbeat: ")

	cancel()
	require.Equal(t, 0, <-done)
}

// TestStopped: the stop line says what became of the partitions taken.
// Before, it said "partitions handed back" whatever happened, even with
// all of them lost and none handed back (Lost:8 Released:0, the server
// down).
func TestStopped(t *testing.T) {
	for _, tc := range []struct {
		st   natsjs.Stats
		want string
	}{
		{natsjs.Stats{}, "stopped: no partition was taken; "},
		{natsjs.Stats{Taken: 8, Lost: 8}, "stopped: none of the 8 partitions taken handed back: all lost (their leases passed, or another collector took them): the next owner takes each from its last stored state; "},
		{natsjs.Stats{Taken: 8, Released: 8}, "stopped: of 8 partitions taken, 8 handed back, 0 lost; "},
		{natsjs.Stats{Taken: 9, Released: 5, Lost: 4}, "stopped: of 9 partitions taken, 5 handed back, 4 lost; "},
	} {
		require.Equal(t, tc.want+fmt.Sprintf("%+v", tc.st), stopped(tc.st))
	}
}
