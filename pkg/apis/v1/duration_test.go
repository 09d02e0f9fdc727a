package v1

import (
	"testing"
	"time"
)

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		720 * time.Hour:              "720h",
		90 * time.Minute:             "1h30m",
		90 * time.Second:             "1m30s",
		45 * time.Second:             "45s",
		6*time.Hour + 30*time.Minute: "6h30m",
		time.Hour + 30*time.Second:   "1h0m30s",
		1500 * time.Millisecond:      "1.5s",
	} {
		if got := ShortDuration(d); got != want {
			t.Errorf("ShortDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
