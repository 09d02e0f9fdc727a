package disruption

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// A pod whose volume is in another zone than the nodes that could take it
// keeps its node: consolidation's simulation holds it to its volume's zone
// (Snapshot.Volumes), as provisioning does.
func TestConsolidationKeepsPodsWithTheirVolumes(t *testing.T) {
	np := nodePool("p")
	medium := types()[1]
	withClaim := func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	}
	for _, tc := range []struct {
		name   string
		zone   string // of the pod's volume; "" for no volume
		delete bool
	}{{"no volume: a's pod moves to b", "", true}, {"a volume in zone-a: it moves to b, also in zone-a", "zone-a", true}, {"a volume in zone-b: no node there, a stays", "zone-b", false}} {
		t.Run(tc.name, func(t *testing.T) {
			a := node("a", np, medium, v1.CapacityTypeOnDemand, podOn("1", withClaim))
			c := cluster(np, a, node("b", np, medium, v1.CapacityTypeOnDemand, podOn("2")))
			if tc.zone != "" {
				c.Volumes = provisioning.Volumes{Requirements: map[string]scheduling.Requirements{
					a.Node.Pods[0].Namespace + "/data": scheduling.NewRequirements(scheduling.NewRequirement(v1.LabelZone, corev1.NodeSelectorOpIn, tc.zone))}}
			}
			d := Compute(context.Background(), c, Options{})
			deleted := len(d.Commands) == 1 && names(d.Commands[0].Candidates) == "a" && len(d.Commands[0].Replacements) == 0
			if deleted != tc.delete {
				t.Errorf("commands %v, want a deleted: %v", d.Commands, tc.delete)
			}
		})
	}
}
