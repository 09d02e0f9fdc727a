package disruption

import (
	"context"
	"fmt"
	"math/rand"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
)

// BenchmarkConsolidationPass: one disruption pass over 1,000 nodes holding
// 20,000 pods, where most nodes are partly used so consolidation has to
// simulate candidates. Reports candidates/sec and the wall time of a pass.
func BenchmarkConsolidationPass(b *testing.B) {
	r := rand.New(rand.NewSource(42))
	np := nodePool("p")
	var its []*cloudprovider.InstanceType
	for i := 1; i <= 64; i *= 2 {
		its = append(its, instanceType(fmt.Sprintf("t%d", i), int64(i)))
	}
	var nodes []*Candidate
	for i := 0; i < 1000; i++ {
		var pods []*corev1.Pod
		for j := 0; j < 20; j++ {
			pods = append(pods, podOn([]string{"100m", "250m", "500m"}[r.Intn(3)]))
		}
		nodes = append(nodes, node(fmt.Sprintf("n%04d", i), np, its[5], v1.CapacityTypeOnDemand, pods...))
	}
	c := &Cluster{Now: t0, NodePools: []*v1.NodePool{np}, InstanceTypes: map[string][]*cloudprovider.InstanceType{"p": its}, Nodes: nodes}
	var d *Decision
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		d = Compute(context.Background(), c, Options{})
	}
	perPass := time.Since(start) / time.Duration(b.N)
	if len(d.Commands) == 0 {
		b.Fatal("expected a consolidation command on an underutilized cluster")
	}
	b.ReportMetric(float64(len(nodes))/perPass.Seconds(), "candidates/sec")
	b.ReportMetric(perPass.Seconds(), "s/pass")
	b.ReportMetric(float64(len(d.Commands[0].Candidates)), "nodes-in-command")
}
