package disruption

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
)

// recorder is the host side of the queue in tests: it records every action
// in order and lets the test decide how replacements fare.
type recorder struct {
	log        []string
	launchErr  error
	state      map[string]ReplacementState
	launched   int
	terminated map[string]bool
}

func newRecorder() *recorder {
	return &recorder{state: map[string]ReplacementState{}, terminated: map[string]bool{}}
}

func (r *recorder) Launch(*provisioning.NodeClaimPlan) (string, error) {
	if r.launchErr != nil {
		return "", r.launchErr
	}
	r.launched++
	name := fmt.Sprintf("replacement-%d", r.launched)
	r.log = append(r.log, "launch "+name)
	return name, nil
}
func (r *recorder) Replacement(name string) ReplacementState { return r.state[name] }
func (r *recorder) DeleteReplacement(name string) error {
	r.log = append(r.log, "delete "+name)
	return nil
}
func (r *recorder) Taint(n string) error   { r.log = append(r.log, "taint "+n); return nil }
func (r *recorder) Untaint(n string) error { r.log = append(r.log, "untaint "+n); return nil }
func (r *recorder) Terminate(n string) error {
	r.log = append(r.log, "terminate "+n)
	r.terminated[n] = true
	return nil
}

func replaceCluster() *Cluster {
	np := nodePool("p")
	return cluster(np, node("big", np, types()[2], v1.CapacityTypeOnDemand, podOn("1")))
}

func TestReplacementFirst(t *testing.T) {
	c := replaceCluster()
	cmd := only(t, Compute(context.Background(), c, Options{}))
	q := &Queue{}
	r := newRecorder()
	q.Add(cmd, t0)
	fresh := func() *Cluster { return c }
	if ev := q.Step(context.Background(), t0.Add(10*time.Second), r, fresh); len(ev) != 0 || len(r.log) != 0 {
		t.Fatalf("nothing happens before the validation delay: %v %v", ev, r.log)
	}
	c.Now = t0.Add(ValidationDelay)
	q.Step(context.Background(), c.Now, r, fresh)
	if strings.Join(r.log, ";") != "launch replacement-1" {
		t.Fatalf("after validation the replacement is launched, nothing else: %v", r.log)
	}
	q.Step(context.Background(), c.Now.Add(time.Minute), r, fresh)
	if len(r.log) != 1 {
		t.Fatalf("candidate untouched while the replacement initializes: %v", r.log)
	}
	r.state["replacement-1"] = ReplacementInitialized
	q.Step(context.Background(), c.Now.Add(2*time.Minute), r, fresh)
	if got := strings.Join(r.log, ";"); got != "launch replacement-1;taint big;terminate big" {
		t.Fatalf("then taint and terminate: %s", got)
	}
	if q.Len() != 0 {
		t.Fatal("command finished")
	}
}

func TestReplacementFailureRollsBack(t *testing.T) {
	c := replaceCluster()
	q := &Queue{}
	q.Add(only(t, Compute(context.Background(), c, Options{})), t0)
	r := newRecorder()
	c.Now = t0.Add(ValidationDelay)
	q.Step(context.Background(), c.Now, r, func() *Cluster { return c })
	r.state["replacement-1"] = ReplacementFailed
	ev := q.Step(context.Background(), c.Now.Add(time.Minute), r, func() *Cluster { return c })
	if got := strings.Join(r.log, ";"); got != "launch replacement-1;delete replacement-1;untaint big" || r.terminated["big"] {
		t.Fatalf("rollback: %s", got)
	}
	if len(ev) != 1 || ev[0].What != "abandoned" {
		t.Fatalf("events: %+v", ev)
	}
	// A launch error abandons at once.
	q = &Queue{}
	q.Add(only(t, Compute(context.Background(), replaceCluster(), Options{})), t0)
	r = newRecorder()
	r.launchErr = errors.New("InsufficientInstanceCapacity")
	ev = q.Step(context.Background(), t0.Add(ValidationDelay), r, func() *Cluster { c := replaceCluster(); c.Now = t0.Add(ValidationDelay); return c })
	if len(ev) != 2 || ev[0].What != "validated" || ev[1].What != "abandoned" || !strings.Contains(ev[1].Detail, "InsufficientInstanceCapacity") {
		t.Fatalf("launch error: %+v", ev)
	}
}

func TestValidationCancels(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Cluster)
		want   string
	}{
		{"a pod arrived", func(c *Cluster) {
			c.Nodes[0].Node.Pods = append(c.Nodes[0].Node.Pods, podOn("1"))
			c.Nodes[0].NodeClaim.Status.LastPodEventTime = metav1.NewTime(c.Now)
		}, "a pod was scheduled to or removed from node big"},
		{"do-not-disrupt appeared", func(c *Cluster) {
			c.Nodes[0].Node.Pods[0].Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"}
		}, "can no longer be disrupted"},
		{"node gone", func(c *Cluster) { c.Nodes = nil }, "node big is gone"},
		{"budget closed", func(c *Cluster) { c.NodePools[0].Spec.Disruption.Budgets = []v1.Budget{{Nodes: "0"}} }, "budget no longer allows"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := replaceCluster()
			q := &Queue{}
			q.Add(only(t, Compute(context.Background(), c, Options{})), t0)
			c.Now = t0.Add(ValidationDelay)
			tc.change(c)
			r := newRecorder()
			ev := q.Step(context.Background(), c.Now, r, func() *Cluster { return c })
			if len(ev) != 1 || ev[0].What != "cancelled" || !strings.Contains(ev[0].Detail, tc.want) || len(r.log) != 0 {
				t.Fatalf("want cancelled with %q and no action, got %+v, %v", tc.want, ev, r.log)
			}
		})
	}
}

func TestSpotInterruption(t *testing.T) {
	np := nodePool("p", func(np *v1.NodePool) { np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "0"}} })
	pinned := podOn("3", func(p *corev1.Pod) { p.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"} })
	c := cluster(np, node("spot-1", np, types()[1], v1.CapacityTypeSpot, pinned))
	cmd, err := Interruption(context.Background(), c, "spot-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(cmd.Replacements) != 1 {
		t.Fatalf("replacement capacity is pre-launched for the pods: %s", cmd)
	}
	q := &Queue{}
	q.Add(cmd, t0)
	r := newRecorder()
	q.Step(context.Background(), t0, r, func() *Cluster { return c })
	if got := strings.Join(r.log, ";"); got != "launch replacement-1;taint spot-1;terminate spot-1" {
		t.Fatalf("interruption: launch and drain at once, despite budget 0 and do-not-disrupt: %s", got)
	}
	if _, err := Interruption(context.Background(), c, "nope"); err == nil {
		t.Fatal("unknown node")
	}
}
