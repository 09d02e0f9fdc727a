package state

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

func zoneAffinity(zones ...string) *corev1.VolumeNodeAffinity {
	return &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: v1.LabelZone, Operator: corev1.NodeSelectorOpIn, Values: zones},
		{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{"node-1"}}}}}}}
}

func storageClass(name string, mode storagev1.VolumeBindingMode, zones ...string) *storagev1.StorageClass {
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "ebs.csi.aws.com"}
	if mode != "" {
		sc.VolumeBindingMode = &mode
	}
	if len(zones) > 0 {
		sc.AllowedTopologies = []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: v1.LabelZone, Values: zones}}},
			{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: v1.LabelZone, Values: []string{"zone-z"}}}}}
	}
	return sc
}

func claim(name string, change func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
	change(pvc)
	return pvc
}

func className(n string) func(*corev1.PersistentVolumeClaim) {
	return func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = &n }
}

func volumeName(n string) func(*corev1.PersistentVolumeClaim) {
	return func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = n }
}

// What each kind of claim asks of its pods' node, or why they wait, as
// upstream's volume topology and claim validation read them.
func TestVolumes(t *testing.T) {
	now := metav1.Now()
	pvs := []*corev1.PersistentVolume{
		{ObjectMeta: metav1.ObjectMeta{Name: "pv-ebs"}, Spec: corev1.PersistentVolumeSpec{NodeAffinity: zoneAffinity("zone-b")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "pv-local"}, Spec: corev1.PersistentVolumeSpec{NodeAffinity: zoneAffinity("zone-c"),
			PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "pv-going", DeletionTimestamp: &now}},
	}
	def := storageClass("default-wffc", storagev1.VolumeBindingWaitForFirstConsumer, "zone-c")
	def.Annotations = map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}
	classes := []*storagev1.StorageClass{storageClass("wffc", storagev1.VolumeBindingWaitForFirstConsumer, "zone-a", "zone-b"),
		storageClass("immediate", storagev1.VolumeBindingImmediate), storageClass("unset", ""), def}
	tests := []struct {
		name     string
		claim    *corev1.PersistentVolumeClaim // nil: the pod's claim is not in the store
		complete bool
		reqs     string // the claim's requirements, "" for none
		waiting  string // a prefix of why its pods wait
	}{
		{"bound: the volume's node affinity, hostname and all", claim("c", volumeName("pv-ebs")), true, "kubernetes.io/hostname In [node-1], topology.kubernetes.io/zone In [zone-b]", ""},
		{"bound local volume: its zone, not its host", claim("c", volumeName("pv-local")), true, "topology.kubernetes.io/zone In [zone-c]", ""},
		{"bound to a volume being deleted", claim("c", volumeName("pv-going")), true, "", "PersistentVolume pv-going of PersistentVolumeClaim default/c is being deleted"},
		{"bound to a volume the store lacks", claim("c", volumeName("pv-gone")), true, "", "PersistentVolumeClaim default/c is bound to PersistentVolume pv-gone, which is not found"},
		{"bound to a volume the store lacks, not complete", claim("c", volumeName("pv-gone")), false, "", ""},
		{"unbound WaitForFirstConsumer: the first allowedTopologies term", claim("c", className("wffc")), true, "topology.kubernetes.io/zone In [zone-a zone-b]", ""},
		{"unbound Immediate waits", claim("c", className("immediate")), true, "", "PersistentVolumeClaim default/c is unbound and StorageClass immediate binds Immediate"},
		{"a class without a binding mode binds Immediate", claim("c", className("unset")), true, "", "PersistentVolumeClaim default/c is unbound and StorageClass unset binds Immediate"},
		{"no class: the default one", claim("c", func(*corev1.PersistentVolumeClaim) {}), true, "topology.kubernetes.io/zone In [zone-c]", ""},
		{"a class the store lacks", claim("c", className("gone")), true, "", "PersistentVolumeClaim default/c names StorageClass gone, which is not found"},
		{"being deleted", claim("c", func(c *corev1.PersistentVolumeClaim) { c.DeletionTimestamp = &now; c.Spec.VolumeName = "pv-ebs" }), true, "", "PersistentVolumeClaim default/c is being deleted"},
		{"lost", claim("c", func(c *corev1.PersistentVolumeClaim) { c.Status.Phase = corev1.ClaimLost; c.Spec.VolumeName = "pv-x" }), true, "", "PersistentVolumeClaim default/c is Lost"},
		{"missing", nil, true, "", "PersistentVolumeClaim default/c not found"},
		{"missing, not complete", nil, false, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStore(AssumeUnschedulable)
			for _, pv := range pvs {
				s.SetPersistentVolume(pv)
			}
			for _, sc := range classes {
				s.SetStorageClass(sc)
			}
			if tc.claim != nil {
				s.SetPersistentVolumeClaim(tc.claim)
			}
			s.SetVolumesComplete(tc.complete)
			s.SetPod(pod("p", "", "1", func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}}
			}))
			v := s.ProvisioningSnapshot().Volumes
			got := ""
			if r, ok := v.Requirements["default/c"]; ok {
				got = r.String()
			}
			if got != tc.reqs {
				t.Errorf("requirements %q, want %q", got, tc.reqs)
			}
			if w := v.Waiting["default/c"]; tc.waiting == "" && w != "" || !strings.HasPrefix(w, tc.waiting) {
				t.Errorf("waiting %q, want %q", w, tc.waiting)
			}
		})
	}
}

// An ephemeral volume's claim, before its controller makes it, is an
// unbound claim of its template's class; once made, the claim as it is.
// The store's Volumes follow claims as they change.
func TestEphemeralAndChangingClaims(t *testing.T) {
	s := NewStore(AssumeUnschedulable)
	s.SetVolumesComplete(true)
	s.SetStorageClass(storageClass("wffc", storagev1.VolumeBindingWaitForFirstConsumer, "zone-a"))
	s.SetPersistentVolume(&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"}, Spec: corev1.PersistentVolumeSpec{NodeAffinity: zoneAffinity("zone-b")}})
	wffc := "wffc"
	s.SetPod(pod("p", "", "1", func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
			VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &wffc}}}}}}
	}))
	zone := func() string {
		v := s.Volumes()
		if w := v.Waiting["default/p-scratch"]; w != "" {
			return "waits: " + w
		}
		return v.Requirements["default/p-scratch"].Get(v1.LabelZone).String()
	}
	if got := zone(); got != "topology.kubernetes.io/zone In [zone-a]" {
		t.Errorf("before its claim is made: %q", got)
	}
	s.SetPersistentVolumeClaim(claim("p-scratch", volumeName("pv")))
	if got := zone(); got != "topology.kubernetes.io/zone In [zone-b]" {
		t.Errorf("bound: %q", got)
	}
	s.DeletePersistentVolume("pv")
	if got := zone(); !strings.HasPrefix(got, "waits: PersistentVolumeClaim default/p-scratch is bound to PersistentVolume pv, which is not found") {
		t.Errorf("its volume gone: %q", got)
	}
	if c := s.Objects(); len(c.PersistentVolumeClaims) != 1 || len(c.StorageClasses) != 1 || !c.VolumesComplete {
		t.Errorf("Cluster lacks the store's volumes: %+v", c)
	}
}
