package v1

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDoNotDisruptAt(t *testing.T) {
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		value   string // "" for no annotation
		started bool
		at      time.Duration // after start
		want    bool
	}{
		{"", true, 0, false},
		{"true", true, 1000 * time.Hour, true},
		{"false", true, 0, false},
		{"30m", true, 29 * time.Minute, true},
		{"30m", true, 30 * time.Minute, false},
		{"2h30m", true, 2 * time.Hour, true},
		{"30m", false, 1000 * time.Hour, true}, // not started: the 30 minutes have not begun
		{"10 minutes", true, 0, false},         // invalid: ignored, as upstream
		{"-5m", true, 0, false},
		{"0s", true, 0, false},
		{"True", true, 0, false}, // only "true" is the boolean form
	} {
		p := &corev1.Pod{}
		if tc.value != "" {
			p.Annotations = map[string]string{AnnotationDoNotDisrupt: tc.value}
		}
		if tc.started {
			p.Status.StartTime = &metav1.Time{Time: start}
		}
		if got := DoNotDisruptAt(p, start.Add(tc.at)); got != tc.want {
			t.Errorf("%q (started %v) at +%s: %v, want %v", tc.value, tc.started, tc.at, got, tc.want)
		}
	}
}
