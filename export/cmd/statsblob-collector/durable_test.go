package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export/collector"
	"github.com/statsblob/statsblob/export/internal/fixture"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// aggregateLines is what /metrics says of the aggregates: the lines of
// the kitchen template's metrics, sorted.
func aggregateLines(t *testing.T, base string) []string {
	lines := strings.Split(scrape(t, base), "\n")
	lines = slices.DeleteFunc(lines, func(l string) bool { return !strings.HasPrefix(l, "kitchen_") })
	slices.Sort(lines)
	return lines
}

// requireSameAggregates: every count, sum, bucket, min and max is equal.
// A t-digest's quantile estimates depend on how the digests were merged,
// and a restart merges the checkpoint's digest with the replayed ones in
// other steps, so those are checked against the data instead: the kitchen
// blob's rtt holds fixture.KitchenRTT once each, so every aggregate holds
// them in equal numbers, and the estimate x for quantile q must have
// q within 0.1 of its rank interval [share below x, share at or below x].
func requireSameAggregates(t *testing.T, want, got []string, msg string) {
	t.Helper()
	require.Len(t, got, len(want), msg)
	for i := range want {
		if !strings.Contains(want[i], `quantile="`) {
			require.Equal(t, want[i], got[i], msg)
			continue
		}
		ws, _, _ := strings.Cut(want[i], " ")
		gs, gv, _ := strings.Cut(got[i], " ")
		require.Equal(t, ws, gs, msg)
		_, qs, _ := strings.Cut(gs, `quantile="`)
		q, err := strconv.ParseFloat(strings.TrimSuffix(qs, `"}`), 64)
		require.NoError(t, err)
		x, err := strconv.ParseFloat(gv, 64)
		require.NoError(t, err)
		below, atOrBelow := 0.0, 0.0
		share := 1 / float64(len(fixture.KitchenRTT))
		for _, v := range fixture.KitchenRTT {
			if float64(v) < x {
				below += share
			}
			if float64(v) <= x {
				atOrBelow += share
			}
		}
		require.True(t, below-0.1 <= q && q <= atOrBelow+0.1, "%s: %s is %v, ranks %v to %v", msg, gs, x, below, atOrBelow)
	}
}

// TestKill9: every post (and batch) the binary acknowledged with -data-dir is on
// /metrics after kill -9 and a restart on the same directory, exactly
// once; twice in a row, with checkpoints in between, and the senders'
// retries of acknowledged posts stay duplicates. Then SIGTERM's last
// checkpoint keeps them too.
func TestKill9(t *testing.T) {
	kb := fixture.KitchenBlob(fixture.Kitchen()).Bytes()
	dir := t.TempDir()
	args := []string{"-data-dir", dir, "-checkpoint-interval", "50ms", "-window", "1h"}
	const workers, perWorker = 8, 40
	posts := 0 // acknowledged, over all runs
	postAll := func(base string, run int) {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range perWorker {
					req, err := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/v1/blobs?host=h%d", base, (w+i)%5), bytes.NewReader(kb))
					if !assertNoError(t, err) {
						return
					}
					if w%2 == 0 { // half the workers are tracked senders
						req.Header.Set("Statsblob-Sender", fmt.Sprintf("w%d", w))
						req.Header.Set("Statsblob-Seq", strconv.Itoa(run*1000+i))
					}
					resp, err := http.DefaultClient.Do(req)
					if !assertNoError(t, err) {
						return
					}
					resp.Body.Close()
					if resp.StatusCode != http.StatusNoContent {
						t.Errorf("post: %d", resp.StatusCode)
						return
					}
				}
			}()
		}
		wg.Wait()
		posts += workers * perWorker
		// And a batch of three blobs, tracked.
		body := []byte(collector.BatchMagic)
		for _, q := range []string{"host=h0", "host=h1", "host=h2"} {
			var err error
			body, err = collector.AppendBatchFrame(body, q, kb)
			require.NoError(t, err)
		}
		req, err := http.NewRequest(http.MethodPost, base+"/v1/batch", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Statsblob-Sender", "batcher")
		req.Header.Set("Statsblob-Seq", strconv.Itoa(run+1))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusNoContent, resp.StatusCode)
		posts += 3
	}
	total := func(lines []string) int {
		n := 0
		for _, l := range lines {
			if strings.HasPrefix(l, "kitchen_bytes_total{") {
				v, err := strconv.Atoi(l[strings.LastIndexByte(l, ' ')+1:])
				require.NoError(t, err)
				n += v
			}
		}
		return n / 1448 // the kitchen blob's bytes SUM
	}
	cmd, base, _ := start(t, args...)
	for run := range 2 {
		postAll(base, run)
		require.False(t, t.Failed())
		want := aggregateLines(t, base)
		require.Equal(t, posts, total(want))
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		_ = cmd.Wait()
		cmd, base, _ = start(t, args...)
		requireSameAggregates(t, want, aggregateLines(t, base), fmt.Sprintf("run %d: after kill -9", run))
		want = aggregateLines(t, base)
		// A retry of an acknowledged post is a duplicate.
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/blobs?host=h0", bytes.NewReader(kb))
		req.Header.Set("Statsblob-Sender", "w0")
		req.Header.Set("Statsblob-Seq", strconv.Itoa(run*1000))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusNoContent, resp.StatusCode)
		require.Equal(t, want, aggregateLines(t, base))
		time.Sleep(120 * time.Millisecond) // a checkpoint or two
	}
	want := aggregateLines(t, base)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait())
	_, base, _ = start(t, args...)
	requireSameAggregates(t, want, aggregateLines(t, base), "after SIGTERM")
}

func assertNoError(t *testing.T, err error) bool {
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}

// TestSIGHUPReload: SIGHUP adds the templates file's new version of a
// template (two versions of one name in one file) without losing an
// aggregate; a file that does not parse changes nothing.
func TestSIGHUPReload(t *testing.T) {
	k1 := fixture.Kitchen()
	file := filepath.Join(t.TempDir(), "t.json")
	j1, err := json.Marshal([]*tpl.Template{k1})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, j1, 0o644))
	cmd, base, lines := start(t, "-templates", file)
	postOne := func(q string, body []byte) int {
		resp, err := http.Post(base+"/v1/blobs?"+q, "application/octet-stream", bytes.NewReader(body))
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, 204, postOne("v=1", fixture.KitchenBlob(k1).Bytes()))
	k2, err := tpl.NewRegistry().New("KITCHEN")
	require.NoError(t, err)
	require.NoError(t, k2.AddVOI(tpl.VOIDef{ID: 0, Name: "bytes", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	b2 := blob.New(k2, nil)
	require.NoError(t, b2.UpdateU64(0, 5))
	require.Equal(t, 422, postOne("v=2", b2.Bytes()))

	require.NoError(t, os.WriteFile(file, []byte("[junk"), 0o644))
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	require.True(t, lines.Scan())
	require.Contains(t, lines.Text(), "statsblob-collector: SIGHUP: "+file+": collector: templates: ")
	require.Contains(t, lines.Text(), "(templates unchanged)")

	j2, err := json.Marshal([]*tpl.Template{k1, k2})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, j2, 0o644))
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	require.True(t, lines.Scan())
	require.Equal(t, "statsblob-collector: SIGHUP: 1 new templates from "+file, lines.Text())
	require.Equal(t, 204, postOne("v=2", b2.Bytes()))
	m := scrape(t, base)
	require.Contains(t, m, `kitchen_bytes_total{v="1"} 1448`)
	require.Contains(t, m, `kitchen_bytes_total{v="2"} 5`)
}

// selfSigned writes a certificate for 127.0.0.1 and its key (PEM) and
// returns their files and a pool that trusts it.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "statsblob test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600))
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// TestTLSAndTokens: the binary serves HTTPS with -tls-cert and -tls-key,
// on the ingest listener too, and -tokens limits posting and reading.
func TestTLSAndTokens(t *testing.T) {
	certFile, keyFile, pool := selfSigned(t)
	tokFile := filepath.Join(t.TempDir(), "tokens.json")
	require.NoError(t, os.WriteFile(tokFile, []byte(`[{"token":"post-0123456789abcdef","labels":{"svc":"api"}},{"token":"read-0123456789abcdef","read":true}]`), 0o600))
	_, base, lines := start(t, "-tls-cert", certFile, "-tls-key", keyFile, "-tokens", tokFile, "-ingest-listen", "127.0.0.1:0")
	base = "https://" + strings.TrimPrefix(base, "http://https://")
	require.True(t, lines.Scan())
	ingest, ok := strings.CutPrefix(lines.Text(), "statsblob-collector: posts also on ")
	require.True(t, ok, lines.Text())
	ingest = strings.TrimSuffix(ingest, " (-ingest-listen)")
	require.True(t, strings.HasPrefix(ingest, "https://"), ingest)
	cl := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	doAt := func(base, method, path, token string, body []byte) (int, string) {
		req, err := http.NewRequest(method, base+path, bytes.NewReader(body))
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := cl.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		p, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(p)
	}
	do := func(method, path, token string, body []byte) (int, string) {
		return doAt(base, method, path, token, body)
	}
	kb := fixture.KitchenBlob(fixture.Kitchen()).Bytes()
	for _, b := range []string{base, ingest} {
		code, body := doAt(b, http.MethodPost, "/v1/blobs?host=a", "", kb)
		require.Equal(t, 401, code, body)
		code, body = doAt(b, http.MethodPost, "/v1/blobs?host=a", "post-0123456789abcdef", kb)
		require.Equal(t, 204, code, body)
	}
	code, _ := do(http.MethodGet, "/metrics", "post-0123456789abcdef", nil)
	require.Equal(t, 401, code)
	code, body := do(http.MethodGet, "/metrics", "read-0123456789abcdef", nil)
	require.Equal(t, 200, code)
	require.Contains(t, body, `kitchen_bytes_total{host="a",svc="api"} 2896`)
	// Plain HTTP is not served.
	resp, err := http.Get("http://" + strings.TrimPrefix(base, "https://") + "/healthz")
	if err == nil {
		resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	}
}
