package disruption

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
)

// healthNode is a registered node of the pool whose condition has had its
// status since ago before t0 (ago < 0: no transition time).
func healthNode(name string, cond corev1.NodeConditionType, status corev1.ConditionStatus, ago time.Duration) *Candidate {
	np := nodePool("general")
	c := node(name, np, types()[0], "on-demand")
	c.Registered = true
	nc := corev1.NodeCondition{Type: cond, Status: status}
	if ago >= 0 {
		nc.LastTransitionTime = metav1.NewTime(t0.Add(-ago))
	}
	c.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}, nc}
	if cond == corev1.NodeReady {
		c.Conditions = c.Conditions[1:]
	}
	return c
}

func healthy(name string) *Candidate {
	return healthNode(name, corev1.NodeReady, corev1.ConditionTrue, time.Hour)
}

// Node repair as upstream's node health controller decides it.
func TestRepairs(t *testing.T) {
	deleting := healthNode("n0", corev1.NodeReady, corev1.ConditionUnknown, time.Hour)
	now := metav1.NewTime(t0)
	deleting.NodeClaim.DeletionTimestamp = &now
	unregistered := healthNode("n9", corev1.NodeReady, corev1.ConditionFalse, time.Hour)
	unregistered.Registered = false
	tests := []struct {
		name    string
		nodes   []*Candidate
		replace string // names replaced, in order
		held    string // Reason of the held pool, "" for none
		next    time.Duration
	}{
		{"Ready Unknown past 30m", []*Candidate{healthNode("n0", corev1.NodeReady, corev1.ConditionUnknown, 31*time.Minute), healthy("n1"), healthy("n2"), healthy("n3"), healthy("n4")},
			"n0", "", 0},
		{"Ready False within 30m: asked again when it ends", []*Candidate{healthNode("n0", corev1.NodeReady, corev1.ConditionFalse, 29*time.Minute), healthy("n1")},
			"", "", time.Minute},
		{"accelerated hardware tolerates 10m", []*Candidate{healthNode("n0", "AcceleratedHardwareReady", corev1.ConditionFalse, 11*time.Minute), healthy("n1"), healthy("n2"), healthy("n3"), healthy("n4")},
			"n0", "", 0},
		{"a condition no policy names", []*Candidate{healthNode("n0", "MemoryPressure", corev1.ConditionTrue, 2*time.Hour), healthy("n1")},
			"", "", 0},
		{"1 of 3 unhealthy: 20 % of 3 rounds up to 1", []*Candidate{healthNode("n0", corev1.NodeReady, corev1.ConditionUnknown, time.Hour), healthy("n1"), healthy("n2")},
			"n0", "", 0},
		{"2 of 5 unhealthy: the pool is left alone", []*Candidate{healthNode("n0", corev1.NodeReady, corev1.ConditionUnknown, time.Hour),
			healthNode("n1", corev1.NodeReady, corev1.ConditionFalse, 5*time.Minute), healthy("n2"), healthy("n3"), healthy("n4")},
			"", "more than 20% of NodePool general's nodes are unhealthy (2 of 5): repair waits until at most 1 are", 25 * time.Minute},
		{"2 of 10 unhealthy: both replaced", append([]*Candidate{healthNode("n0", corev1.NodeReady, corev1.ConditionUnknown, time.Hour),
			healthNode("n1", "KernelReady", corev1.ConditionFalse, 40*time.Minute)}, func() (out []*Candidate) {
			for i := 2; i < 10; i++ {
				out = append(out, healthy(fmt.Sprintf("n%d", i)))
			}
			return out
		}()...), "n0,n1", "", 0},
		{"a claim being deleted is not repaired again, but counts", []*Candidate{deleting, healthy("n1"), healthy("n2"), healthy("n3"), healthy("n4")},
			"", "", 0},
		{"an unregistered claim neither counts nor is repaired", []*Candidate{unregistered, healthy("n1")}, "", "", 0},
		// The claim was made an hour before t0: a condition without a
		// time counts from then.
		{"no transition time: from the claim's creation", []*Candidate{healthNode("n0", corev1.NodeReady, corev1.ConditionUnknown, -1), healthy("n1"), healthy("n2"), healthy("n3"), healthy("n4")},
			"n0", "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := Repairs(cluster(nodePool("general"), tc.nodes...), cloudprovider.AWSRepairPolicies())
			var got []string
			for _, r := range d.Replace {
				got = append(got, r.Candidate.Node.Name)
			}
			if strings.Join(got, ",") != tc.replace {
				t.Errorf("replaced %v, want %q", got, tc.replace)
			}
			held := ""
			if len(d.Held) == 1 {
				held = d.Held[0].Reason()
			}
			if held != tc.held || len(d.Held) > 1 {
				t.Errorf("held %q (%d pools), want %q", held, len(d.Held), tc.held)
			}
			if want := t0.Add(tc.next); tc.next != 0 && !d.Next.Equal(want) || tc.next == 0 && !d.Next.IsZero() {
				t.Errorf("next check %v, want %v", d.Next, tc.next)
			}
		})
	}
	if d := Repairs(cluster(nodePool("general"), healthNode("n0", corev1.NodeReady, corev1.ConditionUnknown, time.Hour)), nil); len(d.Replace) != 0 {
		t.Error("a provider without policies repairs nothing")
	}
}
