package ship

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	f := func(v string, want time.Duration) {
		t.Helper()
		if got := retryAfter(v, now); got != want {
			t.Errorf("retryAfter(%q) = %v, want %v", v, got, want)
		}
	}
	f("", 0)
	f("0", 0)
	f("7", 7*time.Second)
	f(" 120 ", 2*time.Minute)
	f("-1", 0)
	f("1.5", 0)
	f("99999999999", 0) // over 32 bits: ignored
	f(now.Add(90*time.Second).Format(http.TimeFormat), 90*time.Second)
	f(now.Add(-time.Second).Format(http.TimeFormat), 0) // in the past
	f("Fri, 27 Nov 2026 12:00:00", 0)                   // no zone: not an HTTP date
}

// FuzzRetryAfter: any header value gives a wait that is not negative, is
// the number of seconds for a decimal one, and does not depend on
// surrounding blanks.
func FuzzRetryAfter(f *testing.F) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for _, s := range []string{"", "7", "Fri, 27 Nov 2026 12:01:30 GMT", "-3", "1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		d := retryAfter(v, now)
		if d < 0 {
			t.Fatalf("retryAfter(%q) = %v < 0", v, d)
		}
		if n, err := strconv.ParseUint(v, 10, 32); err == nil && d != time.Duration(n)*time.Second {
			t.Fatalf("retryAfter(%q) = %v, want %ds", v, d, n)
		}
		if retryAfter(" "+v+"\t", now) != d {
			t.Fatalf("retryAfter(%q) changes with blanks around it", v)
		}
	})
}

func TestPermanentStatus(t *testing.T) {
	for code := 100; code < 600; code++ {
		want := code == 400 || code == 413 || code == 414 || code == 431
		if permanentStatus(code) != want {
			t.Errorf("permanentStatus(%d) = %v", code, !want)
		}
	}
}
