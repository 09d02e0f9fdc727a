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
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
)

// BenchmarkConsolidationPass: one disruption pass over 1,000 nodes holding
// 20,000 pods, where most nodes are partly used so consolidation has to
// simulate; multi-node consolidation finds a command. cluster-nodes/s is
// the cluster's nodes over the pass's wall time.
func BenchmarkConsolidationPass(b *testing.B) {
	np, its := nodePool("p"), benchTypes()
	nodes := partlyUsed(np, its)
	d := benchmarkPass(b, np, its, nodes)
	if d.Commands[0].Method != MethodMultiNode {
		b.Fatalf("want multi-node, got %s", d.Commands[0])
	}
	b.ReportMetric(float64(len(d.Commands[0].Candidates)), "nodes-in-command")
}

// partlyUsed: 1,000 nodes of 32 cores, each with 20 pods of 100m to 500m.
func partlyUsed(np *v1.NodePool, its []*cloudprovider.InstanceType) []*Candidate {
	r := rand.New(rand.NewSource(42))
	var nodes []*Candidate
	for i := 0; i < 1000; i++ {
		var pods []*corev1.Pod
		for j := 0; j < 20; j++ {
			pods = append(pods, podOn([]string{"100m", "250m", "500m"}[r.Intn(3)]))
		}
		nodes = append(nodes, node(fmt.Sprintf("n%04d", i), np, its[5], v1.CapacityTypeOnDemand, pods...))
	}
	return nodes
}

// BenchmarkConsolidationPassSingleNode: 1,000 nodes of 32 cores, each
// holding one 1-core pod that keeps away from the others (hostname
// anti-affinity): no two nodes merge, so multi-node consolidation searches
// and finds nothing, and single-node consolidation replaces a node by a
// small one.
func BenchmarkConsolidationPassSingleNode(b *testing.B) {
	np := nodePool("p")
	its := benchTypes()
	apart := func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: v1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}}
	}
	var nodes []*Candidate
	for i := 0; i < 1000; i++ {
		nodes = append(nodes, node(fmt.Sprintf("n%04d", i), np, its[5], v1.CapacityTypeOnDemand, podOn("1", apart)))
	}
	d := benchmarkPass(b, np, its, nodes)
	if d.Commands[0].Method != MethodSingleNode {
		b.Fatalf("want single-node, got %s", d.Commands[0])
	}
}

// BenchmarkConsolidationPassAtRest: BenchmarkConsolidationPass's cluster
// handed over pass after pass unchanged, with a Planner and a Memo as the
// simulator and the controller keep them: from the second pass on, every
// simulation's answer is remembered.
func BenchmarkConsolidationPassAtRest(b *testing.B) {
	np, its := nodePool("p"), benchTypes()
	nodes := partlyUsed(np, its)
	benchmarkPass(b, np, its, nodes, func(c *Snapshot) {
		c.Planner = provisioning.NewPlanner(c.NodePools, c.InstanceTypes, nil)
		c.Memo = NewMemo()
		Compute(context.Background(), c, Options{}) // the first pass asks
	})
}

// benchTypes: t1, t2, … t64 cores.
func benchTypes() []*cloudprovider.InstanceType {
	var its []*cloudprovider.InstanceType
	for i := 1; i <= 64; i *= 2 {
		its = append(its, instanceType(fmt.Sprintf("t%d", i), int64(i)))
	}
	return its
}

// benchmarkPass times Compute over the nodes as a host hands them over:
// each node with a Version and each pod with a resourceVersion (pkg/state
// sets them), so the pass's simulations share what they derive.
func benchmarkPass(b *testing.B, np *v1.NodePool, its []*cloudprovider.InstanceType, nodes []*Candidate, setup ...func(*Snapshot)) *Decision {
	for _, n := range nodes {
		n.Node.Version = "1"
		for _, p := range n.Node.Pods {
			p.ResourceVersion = "1"
		}
	}
	c := &Snapshot{Now: t0, NodePools: []*v1.NodePool{np}, InstanceTypes: map[string][]*cloudprovider.InstanceType{"p": its}, Nodes: nodes}
	for _, f := range setup {
		f(c)
	}
	var d *Decision
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		d = Compute(context.Background(), c, Options{})
	}
	perPass := time.Since(start) / time.Duration(b.N)
	if len(d.Commands) == 0 {
		b.Fatal("expected a consolidation command")
	}
	b.ReportMetric(float64(len(nodes))/perPass.Seconds(), "cluster-nodes/s")
	b.ReportMetric(perPass.Seconds(), "s/pass")
	return d
}
