package kubescheduler

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

func withClaim(name string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data",
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}})
	}
}

// The VolumeBinding and VolumeZone filters: a pod goes only where its
// volumes are, and waits while a claim of Immediate binding is unbound.
func TestBinderFiltersByVolumeZone(t *testing.T) {
	inZone := func(zone string) scheduling.Requirements {
		return scheduling.NewRequirements(scheduling.NewRequirement(v1.LabelZone, corev1.NodeSelectorOpIn, zone))
	}
	vols := provisioning.Volumes{
		Requirements: map[string]scheduling.Requirements{"default/pinned-b": inZone("zone-b"), "default/pinned-c": inZone("zone-c")},
		Waiting:      map[string]string{"default/immediate": "PersistentVolumeClaim default/immediate is unbound"},
	}
	tests := []struct {
		name, claim string
		wantNode    string // "" for unschedulable
		wantReason  string
	}{
		{"no claim goes to the emptiest node", "", "a", ""},
		{"a volume in zone-b takes it to zone-b", "pinned-b", "b", ""},
		{"a volume in a zone no node has leaves it pending", "pinned-c", "", "no existing node can run it"},
		{"an unbound Immediate claim holds it", "immediate", "", "its volumes are not ready: PersistentVolumeClaim default/immediate is unbound"},
		{"a claim Volumes does not name asks nothing", "other", "a", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var opts []podOpt
			if tc.claim != "" {
				opts = append(opts, withClaim(tc.claim))
			}
			p := pod("1", "1Gi", opts...)
			nodes := []*provisioning.Node{readyNode("a", "zone-a", 16), readyNode("b", "zone-b", 8, pod("4", "1Gi"))}
			res := NewBinder(BindOptions{Volumes: func() provisioning.Volumes { return vols }}).Bind(nodes, []*corev1.Pod{p})
			got := boundTo(res)[p.Name]
			if got != tc.wantNode {
				t.Fatalf("bound to %q, want %q (%+v)", got, tc.wantNode, res.Unschedulable)
			}
			if tc.wantNode == "" && (len(res.Unschedulable) != 1 || !strings.HasPrefix(res.Unschedulable[0].Reason, tc.wantReason)) {
				t.Errorf("reason %+v, want %q", res.Unschedulable, tc.wantReason)
			}
		})
	}
}
