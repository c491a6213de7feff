package main

import (
	"bytes"
	"encoding/csv"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// FuzzRecordValues: record's line reader updates the VOI with exactly the
// lines that are integers of its type (the SUM is theirs, the others are
// one error each), and its CSV reader takes one value or one error per
// record after the header (or each record, for a column given by number).
func FuzzRecordValues(f *testing.F) {
	tp, err := tpl.NewRegistry().New("R")
	require.NoError(f, err)
	require.NoError(f, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "v", DType: voi.IntS64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	for _, s := range []string{"5\n60\n# c\n\nx\n-1\n", "a,b\n1,2\n3,4\n", "", "\"q\nq\",1\n", "9223372036854775807\n1\n"} {
		f.Add(s, "")
		f.Add(s, "b")
		f.Add(s, "2")
	}
	f.Fuzz(func(t *testing.T, in, col string) {
		b := blob.New(tp, blob.NewEnv(func() int64 { return 0 }, 1))
		n, errs := recordValues(b, 0, voi.IntS64, nil, strings.NewReader(in), col, "in")
		if n < 0 {
			return // a CSV that does not parse, or a column not in the header
		}
		if col == "" {
			var sum int64
			want, bad := 0, 0
			for _, l := range strings.Split(strings.ReplaceAll(in, "\r\n", "\n"), "\n") {
				l = strings.TrimSpace(l)
				if l == "" || strings.HasPrefix(l, "#") {
					continue
				}
				v, err := strconv.ParseInt(l, 10, 64)
				if err != nil {
					bad++
					continue
				}
				// SUM wraps as the C's does; an overflow is counted, not refused.
				sum += v
				want++
			}
			if bytes.ContainsRune([]byte(in), '\r') {
				return // bufio.Scanner keeps a lone \r inside a line
			}
			if n != want || len(errs) != bad {
				t.Fatalf("%q: %d values, %d errors; want %d, %d", in, n, len(errs), want, bad)
			}
			s, err := b.Fetch(0, voi.Sum)
			require.NoError(t, err)
			if want > 0 && int64(leU64(s.Data)) != sum && s.Errs == 0 {
				t.Fatalf("%q: SUM %d, want %d", in, int64(leU64(s.Data)), sum)
			}
			return
		}
		// CSV: every record after the header (if the column is named)
		// gives one value or one error.
		cr := csv.NewReader(strings.NewReader(in))
		cr.FieldsPerRecord = -1
		recs, err := cr.ReadAll()
		if err != nil {
			t.Fatalf("%q: recorded although the CSV does not parse: %v", in, err)
		}
		data := len(recs)
		if _, err := strconv.Atoi(col); err != nil && data > 0 {
			data-- // the header
		}
		if n+len(errs) != data {
			t.Fatalf("%q col %q: %d values and %d errors for %d records", in, col, n, len(errs), data)
		}
	})
}

func leU64(p []byte) uint64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(p[i])
	}
	return v
}
