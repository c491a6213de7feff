package main

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/statsblob/statsblob/blob"
)

// maxFetch bounds the body fetch reads: a blob's size is a uint16.
const maxFetch = 1 << 16

// runFetch saves a blob a statsblob-collector serves (GET /v1/aggregate).
func runFetch(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("fetch", "fetch -o OUT [-token T] [-timeout D] URL",
		"Fetch GETs URL, a statsblob-collector's merged aggregate (for example\n"+
			"http://127.0.0.1:9129/v1/aggregate?tpl=TCP_DEFAULT&host=web*), checks that the\n"+
			"answer is a valid blob (blob.FromBytes) and writes it to OUT, through a\n"+
			"temporary file renamed into place (\"-o -\": standard output). Its template is\n"+
			"the wide form of the senders' (tpl.Widen): render and quantile read it, by\n"+
			"VOI id, or by name with -templates of the collector's GET /v1/templates?wide=1.\n"+
			"stderr says how many aggregates and posted blobs it merges. An answer\n"+
			"other than 200 with a blob is an error naming the status and the collector's\n"+
			"reason; the exit status is then 1.\n",
		stdout, stderr)
	out := fs.String("o", "", "write the blob to `OUT` (required; - for standard output)")
	token := fs.String("token", "", "send `T` as a bearer token (Authorization: Bearer T)")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after `D`")
	pos, code, ok := fs.parse(args, 1)
	if !ok {
		return code
	}
	if *out == "" {
		return fs.usageError("-o OUT is required")
	}
	if len(pos) != 1 {
		return fs.usageError("one URL, not %d arguments", len(pos))
	}
	if *timeout <= 0 {
		return fs.usageError("-timeout %v: want a positive duration", *timeout)
	}
	url := pos[0]
	if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
		return fs.usageError("URL %q: http:// or https://", url)
	}
	body, header, err := exchange{method: http.MethodGet, url: url, accept: "application/octet-stream",
		token: *token, timeout: *timeout, limit: maxFetch, what: "blob"}.do()
	var bad errBadURL
	if errors.As(err, &bad) {
		return fs.usageError("URL %q: %v", url, bad.err)
	}
	if err != nil {
		fs.fail(err)
		return 1
	}
	b, err := blob.FromBytes(body, nil)
	if err != nil {
		fs.fail(fmt.Errorf("%s: the answer is not a blob: %w", url, err))
		return 1
	}
	if *out == "-" {
		if _, err := stdout.Write(b.Bytes()); err != nil {
			fs.fail(err)
			return 1
		}
	} else if err := writeFileAtomic(*out, b.Bytes()); err != nil {
		fs.fail(err)
		return 1
	}
	fmt.Fprintf(stderr, "statsblob fetch: %s aggregates, %s blobs, window from %s\n",
		orDash(header.Get("Statsblob-Aggregates")), orDash(header.Get("Statsblob-Blobs")),
		orDash(header.Get("Statsblob-Window-Start")))
	return 0
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
