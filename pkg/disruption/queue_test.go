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
	taintErr   map[string]error
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
func (r *recorder) Taint(n string) error {
	if r.taintErr[n] != nil {
		return r.taintErr[n]
	}
	r.log = append(r.log, "taint "+n)
	return nil
}
func (r *recorder) Untaint(n string) error { r.log = append(r.log, "untaint "+n); return nil }
func (r *recorder) Terminate(n string) error {
	r.log = append(r.log, "terminate "+n)
	r.terminated[n] = true
	return nil
}

func replaceCluster() *Snapshot {
	np := nodePool("p")
	return cluster(np, node("big", np, types()[2], v1.CapacityTypeOnDemand, podOn("1")))
}

func TestReplacementFirst(t *testing.T) {
	c := replaceCluster()
	cmd := only(t, Compute(context.Background(), c, Options{}))
	q := &Queue{}
	r := newRecorder()
	if !q.NextValidation().IsZero() || q.AwaitingReplacements() {
		t.Fatal("an empty queue waits for nothing")
	}
	q.Add(cmd, t0)
	fresh := func() *Snapshot { return c }
	if ev := q.Step(context.Background(), t0.Add(10*time.Second), r, fresh); len(ev) != 0 || len(r.log) != 0 {
		t.Fatalf("nothing happens before the validation delay: %v %v", ev, r.log)
	}
	if got := q.NextValidation(); !got.Equal(t0.Add(ValidationDelay)) || q.AwaitingReplacements() {
		t.Fatalf("validating: next validation %s (want %s), awaiting replacements %v", got, t0.Add(ValidationDelay), q.AwaitingReplacements())
	}
	c.Now = t0.Add(ValidationDelay)
	q.Step(context.Background(), c.Now, r, fresh)
	if strings.Join(r.log, ";") != "taint big;launch replacement-1" {
		t.Fatalf("after validation the candidate is tainted and the replacement launched, nothing else: %v", r.log)
	}
	if !q.NextValidation().IsZero() || !q.AwaitingReplacements() {
		t.Fatalf("validated: next validation %s, awaiting replacements %v", q.NextValidation(), q.AwaitingReplacements())
	}
	q.Step(context.Background(), c.Now.Add(time.Minute), r, fresh)
	if len(r.log) != 2 {
		t.Fatalf("candidate untouched while the replacement initializes: %v", r.log)
	}
	r.state["replacement-1"] = ReplacementInitialized
	q.Step(context.Background(), c.Now.Add(2*time.Minute), r, fresh)
	if got := strings.Join(r.log, ";"); got != "taint big;launch replacement-1;terminate big" {
		t.Fatalf("then terminate: %s", got)
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
	q.Step(context.Background(), c.Now, r, func() *Snapshot { return c })
	r.state["replacement-1"] = ReplacementFailed
	ev := q.Step(context.Background(), c.Now.Add(time.Minute), r, func() *Snapshot { return c })
	if got := strings.Join(r.log, ";"); got != "taint big;launch replacement-1;delete replacement-1;untaint big" || r.terminated["big"] {
		t.Fatalf("rollback: %s", got)
	}
	if len(ev) != 1 || ev[0].What != EventAbandoned || ev[0].Err == nil {
		t.Fatalf("events: %+v", ev)
	}
	// A launch error abandons at once.
	q = &Queue{}
	q.Add(only(t, Compute(context.Background(), replaceCluster(), Options{})), t0)
	r = newRecorder()
	r.launchErr = errors.New("InsufficientInstanceCapacity")
	ev = q.Step(context.Background(), t0.Add(ValidationDelay), r, func() *Snapshot { c := replaceCluster(); c.Now = t0.Add(ValidationDelay); return c })
	if len(ev) != 3 || ev[0].What != EventValidated || ev[1].What != EventTainted || ev[2].What != EventAbandoned ||
		!errors.Is(ev[2].Err, r.launchErr) || strings.Join(r.log, ";") != "taint big;untaint big" {
		t.Fatalf("launch error: the host's error comes back and the taint is undone: %+v %v", ev, r.log)
	}
}

func TestValidationCancels(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Snapshot)
		want   string
	}{
		{"a pod arrived", func(c *Snapshot) {
			c.Nodes[0].Node.Pods = append(c.Nodes[0].Node.Pods, podOn("1"))
			c.Nodes[0].NodeClaim.Status.LastPodEventTime = metav1.NewTime(c.Now)
		}, "a pod was scheduled to or removed from node big"},
		{"do-not-disrupt appeared", func(c *Snapshot) {
			c.Nodes[0].Node.Pods[0].Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"}
		}, "can no longer be disrupted"},
		{"node gone", func(c *Snapshot) { c.Nodes = nil }, "node big is gone"},
		{"budget closed", func(c *Snapshot) { c.NodePools[0].Spec.Disruption.Budgets = []v1.Budget{{Nodes: "0"}} }, "budget no longer allows"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := replaceCluster()
			q := &Queue{}
			q.Add(only(t, Compute(context.Background(), c, Options{})), t0)
			c.Now = t0.Add(ValidationDelay)
			tc.change(c)
			r := newRecorder()
			ev := q.Step(context.Background(), c.Now, r, func() *Snapshot { return c })
			if len(ev) != 1 || ev[0].What != EventCancelled || !strings.Contains(ev[0].Detail, tc.want) || len(r.log) != 0 {
				t.Fatalf("want cancelled with %q and no action, got %+v, %v", tc.want, ev, r.log)
			}
		})
	}
}

// TestTaintFailureRollsBack: when the host cannot taint the second
// candidate, the first is untainted, nothing is launched, and the host's
// error comes back.
func TestTaintFailureRollsBack(t *testing.T) {
	np := nodePool("p")
	c := cluster(np, node("a", np, types()[0], v1.CapacityTypeOnDemand), node("b", np, types()[0], v1.CapacityTypeOnDemand))
	cmd := only(t, Compute(context.Background(), c, Options{}))
	if cmd.Method != MethodEmpty || len(cmd.Candidates) != 2 {
		t.Fatalf("want both empty nodes in one command: %s", cmd)
	}
	q := &Queue{}
	q.Add(cmd, t0)
	if !q.Validating() {
		t.Fatal("an emptiness command waits for its validation")
	}
	r := newRecorder()
	boom := errors.New("conflict")
	r.taintErr = map[string]error{"b": boom}
	c.Now = t0.Add(ValidationDelay)
	ev := q.Step(context.Background(), c.Now, r, func() *Snapshot { return c })
	if got := strings.Join(r.log, ";"); got != "taint a;untaint a" || len(ev) != 2 || ev[1].What != EventAbandoned || !errors.Is(ev[1].Err, boom) {
		t.Fatalf("log %s, events %+v", got, ev)
	}
	if q.Len() != 0 || q.Validating() {
		t.Error("the abandoned command is finished")
	}
}

// TestDriftDoesNotWaitForValidation: drift commands are carried out at
// once, as upstream only validates consolidation.
func TestDriftDoesNotWaitForValidation(t *testing.T) {
	cmd := &Command{Method: MethodDrift, Reason: v1.DisruptionReasonDrifted, Candidates: replaceCluster().Nodes}
	q := &Queue{}
	q.Add(cmd, t0)
	if q.Validating() {
		t.Fatal("drift is not validated")
	}
	r := newRecorder()
	q.Step(context.Background(), t0, r, func() *Snapshot { t.Fatal("no validation"); return nil })
	if got := strings.Join(r.log, ";"); got != "taint big;terminate big" {
		t.Fatalf("drift without replacements: taint and terminate at once: %s", got)
	}
}

// TestMethodTable: the methods in upstream's order, each with its reason,
// and only consolidation's commands validated after the delay.
func TestMethodTable(t *testing.T) {
	var got []string
	for _, m := range methods {
		got = append(got, fmt.Sprintf("%s/%s/validated=%v/eventual=%v", m.kind(), m.reason(), Validates(m.kind()), m.eventual()))
	}
	want := "empty/Empty/validated=true/eventual=false;drift/Drifted/validated=false/eventual=true;" +
		"multi-node consolidation/Underutilized/validated=true/eventual=false;single-node consolidation/Underutilized/validated=true/eventual=false"
	if strings.Join(got, ";") != want {
		t.Errorf("methods:\n%s\nwant\n%s", strings.Join(got, ";"), want)
	}
}

// TestBatchValidatedTogether: the commands one pass decided together are
// validated on one snapshot before any acts — checked one by one, the
// second saw the first's candidate tainted, its pod without a place (its
// replacement not in the snapshot yet), and was cancelled — and under
// one budget: a budget lowered to 2 since cancels the third.
func TestBatchValidatedTogether(t *testing.T) {
	apart := func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, TopologyKey: corev1.LabelHostname}}}}
	}
	pods := []*corev1.Pod{podOn("1", apart), podOn("1", apart), podOn("1", apart)}
	r := newRecorder()
	tainted := func() map[string]bool {
		out := map[string]bool{}
		for _, l := range r.log {
			if n, ok := strings.CutPrefix(l, "taint "); ok {
				out[n] = true
			}
		}
		return out
	}
	build := func(budget string) *Snapshot {
		np := nodePool("p", func(np *v1.NodePool) { np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: budget}} })
		c := cluster(np, node("a", np, types()[2], v1.CapacityTypeOnDemand, pods[0]),
			node("b", np, types()[2], v1.CapacityTypeOnDemand, pods[1]), node("c", np, types()[2], v1.CapacityTypeOnDemand, pods[2]))
		for _, cand := range c.Nodes {
			cand.Disrupting = tainted()[cand.Node.Name]
		}
		return c
	}
	d := Compute(context.Background(), build("100%"), Options{})
	if len(d.Commands) != 3 {
		t.Fatalf("want three commands from one pass, got %v", d.Commands)
	}
	for _, tc := range []struct {
		budget string
		want   string
	}{{"100%", "taint a;launch replacement-1;taint b;launch replacement-2;taint c;launch replacement-3"}, {"2", "taint a;launch replacement-1;taint b;launch replacement-2"}} {
		r.log, r.launched = nil, 0
		q := &Queue{}
		for _, cmd := range d.Commands {
			q.Add(cmd, t0)
		}
		fresh := func() *Snapshot { c := build(tc.budget); c.Now = t0.Add(ValidationDelay); return c }
		ev := q.Step(context.Background(), t0.Add(ValidationDelay), r, fresh)
		if got := strings.Join(r.log, ";"); got != tc.want {
			t.Errorf("budget %s: want %q, got %q (events %v)", tc.budget, tc.want, got, ev)
		}
	}
}
