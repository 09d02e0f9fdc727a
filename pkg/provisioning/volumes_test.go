package provisioning

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

func claimVolume(name string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data",
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}})
	}
}

func ephemeralVolume(name string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: name,
			VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{}}}})
	}
}

// Pods with claims, as upstream's volume topology plans them: a volume's
// zone pins the claim, an unbound WaitForFirstConsumer claim takes its
// class's zones, a claim that waits leaves its pod unplanned with why.
func TestVolumeTopology(t *testing.T) {
	zones := func(zs ...string) scheduling.Requirements {
		return scheduling.NewRequirements(scheduling.NewRequirement(v1.LabelZone, corev1.NodeSelectorOpIn, zs...))
	}
	vols := Volumes{
		Requirements: map[string]scheduling.Requirements{
			"default/bound-c":     zones("zone-c"),
			"default/wffc-ab":     zones("zone-a", "zone-b"),
			"default/p-1-scratch": zones("zone-b"),
		},
		Waiting: map[string]string{"default/immediate": "PersistentVolumeClaim default/immediate is unbound and StorageClass efs binds Immediate"},
	}
	tests := []struct {
		name      string
		opts      []podOpt
		wantZones []string // the claim's allowed zones; nil: unschedulable
		reason    string
	}{
		{"a bound volume pins its zone", []podOpt{claimVolume("bound-c")}, []string{"zone-c"}, ""},
		{"an unbound WaitForFirstConsumer claim takes its class's zones", []podOpt{claimVolume("wffc-ab")}, []string{"zone-a", "zone-b"}, ""},
		{"an ephemeral volume's claim is <pod>-<volume>", []podOpt{ephemeralVolume("scratch")}, []string{"zone-b"}, ""},
		{"two claims intersect", []podOpt{claimVolume("wffc-ab"), claimVolume("bound-c")}, nil, "zone"},
		{"a claim that waits holds the pod", []podOpt{claimVolume("immediate")}, nil, "waits for its volumes: PersistentVolumeClaim default/immediate is unbound and StorageClass efs binds Immediate"},
		{"a volume's zone and the pod's node selector conflict", []podOpt{claimVolume("bound-c"), nodeSelector(v1.LabelZone, "zone-a")}, nil, "zone"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := pod("1", "1Gi", tc.opts...)
			p.Name = "p-1"
			res := solve(t, []*v1.NodePool{pool("p")}, standardTypes(), []*corev1.Pod{p}, func(s *Snapshot) { s.Volumes = vols })
			if tc.wantZones == nil {
				if len(res.Unschedulable) != 1 || !strings.Contains(res.Unschedulable[0].Reason, tc.reason) {
					t.Fatalf("want unschedulable with %q, got %+v", tc.reason, res)
				}
				return
			}
			requireAllPlaced(t, res)
			if got := res.NewNodeClaims[0].Requirements.Get(v1.LabelZone).Values(); strings.Join(got, ",") != strings.Join(tc.wantZones, ",") {
				t.Errorf("claim zones %v, want %v", got, tc.wantZones)
			}
		})
	}
}

// As upstream, a volume's zone narrows the node, not the domains a
// topology spread counts: three replicas spread over three zones, one of
// them pinned to zone-c by its volume, still take one zone each.
func TestVolumeZoneDoesNotNarrowSpreadDomains(t *testing.T) {
	vols := Volumes{Requirements: map[string]scheduling.Requirements{
		"default/data-0": scheduling.NewRequirements(scheduling.NewRequirement(v1.LabelZone, corev1.NodeSelectorOpIn, "zone-c"))}}
	var pods []*corev1.Pod
	for i := 0; i < 3; i++ {
		opts := []podOpt{label("app", "db"), spread(v1.LabelZone, 1, func(c *corev1.TopologySpreadConstraint) {
			honor := corev1.NodeInclusionPolicyHonor
			c.NodeAffinityPolicy = &honor
		})}
		if i == 0 {
			opts = append(opts, claimVolume("data-0"))
		}
		pods = append(pods, pod("1", "1Gi", opts...))
	}
	res := solve(t, []*v1.NodePool{pool("p")}, standardTypes(), pods, func(s *Snapshot) { s.Volumes = vols })
	requireAllPlaced(t, res)
	seen := map[string]int{}
	for _, nc := range res.NewNodeClaims {
		seen[zoneOf(nc)] += len(nc.Pods)
	}
	if len(seen) != 3 {
		t.Errorf("pods by zone %v, want one in each of three zones", seen)
	}
}
