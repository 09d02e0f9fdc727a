package disruption

import (
	"context"
	"fmt"
	"math/rand"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
)

// TestBudgetsNeverExceeded: over random clusters and random budget sets,
// at every tick the nodes of a pool being disrupted never exceed what its
// budgets allow for the reason, and every command's pods have a place.
func TestBudgetsNeverExceeded(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	commands, blockedByBudget := 0, 0
	defer func() {
		t.Logf("%d commands checked, %d nodes held back by budgets", commands, blockedByBudget)
		if commands < 20 || blockedByBudget == 0 {
			t.Errorf("the property was hardly exercised: %d commands, %d budget blocks", commands, blockedByBudget)
		}
	}()
	schedules := []string{"", "0 9 * * mon-fri", "@daily", "30 * * * *", "0 0 * * 0"}
	for trial := 0; trial < 60; trial++ {
		np := nodePool("p", func(np *v1.NodePool) {
			np.Spec.Disruption.Budgets = nil
			for i := 0; i < 1+r.Intn(3); i++ {
				b := v1.Budget{Nodes: []string{"0", "1", "2", "10%", "30%", "50%", "100%"}[r.Intn(7)]}
				if s := schedules[r.Intn(len(schedules))]; s != "" {
					b.Schedule = &s
					b.Duration = &metav1.Duration{Duration: time.Duration(1+r.Intn(10)) * time.Hour}
				}
				if r.Intn(2) == 0 {
					b.Reasons = []v1.DisruptionReason{Reasons[r.Intn(len(Reasons))]}
				}
				np.Spec.Disruption.Budgets = append(np.Spec.Disruption.Budgets, b)
			}
		})
		var nodes []*Candidate
		for i := 0; i < 3+r.Intn(10); i++ {
			var pods []*corev1.Pod
			for j := 0; j < r.Intn(4); j++ {
				pods = append(pods, podOn([]string{"100m", "500m", "1"}[r.Intn(3)]))
			}
			it := types()[r.Intn(3)]
			n := node(fmt.Sprintf("t%d-n%d", trial, i), np, it, v1.CapacityTypeOnDemand, pods...)
			if r.Intn(4) == 0 {
				n.NodeClaim.Annotations[v1.AnnotationNodePoolHash] = "stale"
			}
			nodes = append(nodes, n)
		}
		c := cluster(np, nodes...)
		c.Now = t0.Add(time.Duration(r.Intn(7*24)) * time.Hour)
		for tick := 0; tick < 6; tick++ {
			d := Compute(context.Background(), c, Options{})
			for _, b := range d.Blocked {
				if b.Reason.Code == BlockBudget {
					blockedByBudget++
				}
			}
			disrupting := 0
			for _, n := range c.Nodes {
				if n.Disrupting {
					disrupting++
				}
			}
			for _, cmd := range d.Commands {
				limit := Allowed(np, cmd.Reason, PoolNodes{Total: len(c.Nodes)}, c.Now)
				if limit.Binding >= 0 && disrupting+len(cmd.Candidates) > limit.Allowed {
					t.Fatalf("trial %d tick %d: %d disrupting + %d new > %d allowed (%s)", trial, tick, disrupting, len(cmd.Candidates), limit.Allowed, limit)
				}
				// Every pod of the candidates has a place: on the rest of the
				// cluster plus no more new nodes than the command launches.
				res := provisioning.Solve(context.Background(), &provisioning.Snapshot{NodePools: c.NodePools, InstanceTypes: c.InstanceTypes,
					Nodes: remaining(c, cmd), Pods: podsOf(cmd)})
				if len(res.Unschedulable) > 0 || len(res.NewNodeClaims) > len(cmd.Replacements) {
					t.Fatalf("trial %d tick %d: %s leaves pods without a place (%d unschedulable, %d new nodes needed)", trial, tick, cmd, len(res.Unschedulable), len(res.NewNodeClaims))
				}
				disrupting += len(cmd.Candidates)
				commands++
				for _, cand := range cmd.Candidates {
					cand.Disrupting = true
				}
			}
			c.Now = c.Now.Add(time.Duration(1+r.Intn(5)) * time.Hour)
		}
	}
}

func remaining(c *Snapshot, cmd *Command) []*provisioning.Node {
	gone := map[*Candidate]bool{}
	for _, cand := range cmd.Candidates {
		gone[cand] = true
	}
	var out []*provisioning.Node
	for _, cand := range c.Nodes {
		if !gone[cand] && !cand.Disrupting {
			out = append(out, cand.Node)
		}
	}
	return out
}

func podsOf(cmd *Command) []*corev1.Pod {
	var out []*corev1.Pod
	for _, cand := range cmd.Candidates {
		out = append(out, reschedulable(cand.Node)...)
	}
	return out
}
