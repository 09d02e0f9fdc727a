package state

import (
	"testing"
	"time"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

func TestRegistrationHold(t *testing.T) {
	appeared := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	waiting, ready, gone := CohortMember{}, CohortMember{Appeared: true}, CohortMember{Gone: true}
	for _, tc := range []struct {
		name   string
		others []CohortMember
		after  time.Duration
		want   time.Duration
	}{
		{"alone", nil, 0, 0},
		{"every other member's Node there", []CohortMember{ready, ready}, time.Second, 0},
		{"a member gone", []CohortMember{ready, gone}, time.Second, 0},
		{"a member's Node not there: wait for the rest of the hold", []CohortMember{ready, waiting}, 4 * time.Second, CohortHold - 4*time.Second},
		{"the hold is over", []CohortMember{waiting}, CohortHold, 0},
		{"long over (a restart)", []CohortMember{waiting}, time.Hour, 0},
	} {
		if got := RegistrationHold(appeared, tc.others, appeared.Add(tc.after)); got != tc.want {
			t.Errorf("%s: hold %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestSetCohort(t *testing.T) {
	nc := &v1.NodeClaim{}
	SetCohort(nc, "")
	if nc.Annotations != nil || Cohort(nc) != "" {
		t.Fatalf("no cohort: annotations %v", nc.Annotations)
	}
	SetCohort(nc, "k3")
	if Cohort(nc) != "k3" || nc.Annotations[AnnotationLaunchCohort] != "k3" {
		t.Fatalf("cohort %q, annotations %v", Cohort(nc), nc.Annotations)
	}
}
