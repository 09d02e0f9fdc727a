package sim

import (
	"fmt"
	"hash/fnv"
	"sort"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/trace"
)

// annBindCompleted is the annotation the volume binder sets.
const annBindCompleted = "pv.kubernetes.io/bind-completed"

// volumeModel is the simulated cluster's storage: its claims and classes,
// the StatefulSets' claims made from their templates, and the volume
// binder that binds a WaitForFirstConsumer claim in the zone of the node
// its first pod binds to.
type volumeModel struct {
	claims  map[string]*corev1.PersistentVolumeClaim // by namespace/name
	classes map[string]*storagev1.StorageClass
	// bound counts the claims the binder bound in the run, by zone.
	bound map[string]int
	seq   int // volumes made
}

// startVolumes hands the scenario's storage to the store: every claim,
// volume and class there is.
func (e *simulation) startVolumes() {
	e.vol = volumeModel{claims: map[string]*corev1.PersistentVolumeClaim{}, classes: map[string]*storagev1.StorageClass{}, bound: map[string]int{}}
	for _, sc := range e.in.StorageClasses {
		e.vol.classes[sc.Name] = sc
		e.st.SetStorageClass(sc)
	}
	for _, pv := range e.in.PersistentVolumes {
		e.st.SetPersistentVolume(pv)
	}
	for _, pvc := range e.in.PersistentVolumeClaims {
		e.setClaim(pvc.DeepCopy())
	}
	e.st.SetVolumesComplete(true)
}

func (e *simulation) setClaim(pvc *corev1.PersistentVolumeClaim) {
	pvc.ResourceVersion = e.nextRV()
	e.vol.claims[pvc.Namespace+"/"+pvc.Name] = pvc
	e.st.SetPersistentVolumeClaim(pvc)
	e.trace(trace.OpAdd, "PersistentVolumeClaim", pvc)
	e.provisionImmediate(pvc)
}

// claimPod gives a StatefulSet's pod its claims, as the StatefulSet
// controller does: a volume per claim template, on the claim
// "<template>-<pod>", made if it does not exist yet (claims outlive their
// pods: a replacement finds its volume where it was).
func (e *simulation) claimPod(w *workload, p *corev1.Pod) {
	for _, t := range w.claimTemplates {
		name := t.Name + "-" + p.Name
		vol := corev1.Volume{Name: t.Name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}
		replaced := false
		for i := range p.Spec.Volumes {
			if p.Spec.Volumes[i].Name == t.Name {
				p.Spec.Volumes[i], replaced = vol, true
			}
		}
		if !replaced {
			p.Spec.Volumes = append(p.Spec.Volumes, vol)
		}
		if e.vol.claims[p.Namespace+"/"+name] != nil {
			continue
		}
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: p.Namespace, Labels: p.Labels,
			CreationTimestamp: metav1.NewTime(e.clk.now)}, Spec: *t.Spec.DeepCopy()}
		pvc.Status.Phase = corev1.ClaimPending
		e.setClaim(pvc)
	}
}

// bindVolumes is the volume binder once a pod is bound to n: each unbound
// claim of a WaitForFirstConsumer class gets a volume in n's zone (what a
// zonal CSI driver provisions), and is bound to it.
func (e *simulation) bindVolumes(p *corev1.Pod, n *simNode) {
	for _, v := range p.Spec.Volumes {
		name := provisioning.ClaimName(p, v)
		pvc := e.vol.claims[p.Namespace+"/"+name]
		if pvc == nil || pvc.Spec.VolumeName != "" || pvc.Spec.StorageClassName == nil {
			continue
		}
		sc := e.vol.classes[*pvc.Spec.StorageClassName]
		if sc == nil || sc.VolumeBindingMode == nil || *sc.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
			continue
		}
		e.provisionVolume(pvc, sc, n.claim.Labels[v1.LabelZone])
	}
}

// Provisioners the simulator knows: the zonal ones make a volume in one
// zone, the regional ones a volume every zone reaches.
var (
	zonalProvisioners    = map[string]bool{"ebs.csi.aws.com": true, "kubernetes.io/aws-ebs": true}
	regionalProvisioners = map[string]bool{"efs.csi.aws.com": true}
)

// zoneKeys are the topology keys a zonal class's allowedTopologies name
// zones by.
var zoneKeys = map[string]bool{v1.LabelZone: true, "topology.ebs.csi.aws.com/zone": true, "failure-domain.beta.kubernetes.io/zone": true}

// provisionImmediate is the external provisioner for an unbound claim of
// an Immediate class, which provisions at once, before any pod asks: a
// known zonal provisioner's volume goes in one of the zones the class's
// allowedTopologies (first term) allow among the cluster's, chosen by the
// claim's name so claims spread the same way in every run; a regional
// one's has no zone. A class of a provisioner the simulator does not know
// gets no volume, and its pods wait, saying why.
func (e *simulation) provisionImmediate(pvc *corev1.PersistentVolumeClaim) {
	if pvc.Spec.VolumeName != "" || pvc.DeletionTimestamp != nil || pvc.Spec.StorageClassName == nil {
		return
	}
	sc := e.vol.classes[*pvc.Spec.StorageClassName]
	if sc == nil || (sc.VolumeBindingMode != nil && *sc.VolumeBindingMode != storagev1.VolumeBindingImmediate) {
		return
	}
	switch {
	case regionalProvisioners[sc.Provisioner]:
		e.provisionVolume(pvc, sc, "")
	case zonalProvisioners[sc.Provisioner]:
		zones := e.clusterZones()
		if len(sc.AllowedTopologies) > 0 {
			allowed := map[string]bool{}
			for _, ex := range sc.AllowedTopologies[0].MatchLabelExpressions {
				if zoneKeys[ex.Key] {
					for _, z := range ex.Values {
						allowed[z] = true
					}
				}
			}
			var in []string
			for _, z := range zones {
				if allowed[z] {
					in = append(in, z)
				}
			}
			zones = in
		}
		if len(zones) == 0 {
			return // nowhere to make it: the pods wait, saying so
		}
		h := fnv.New32a()
		_, _ = h.Write([]byte(pvc.Namespace + "/" + pvc.Name))
		e.provisionVolume(pvc, sc, zones[h.Sum32()%uint32(len(zones))])
	}
}

// clusterZones are the zones the NodePools' offerings span, sorted.
func (e *simulation) clusterZones() []string {
	set := map[string]bool{}
	for _, its := range e.cloud.InstanceTypes() {
		for _, it := range its {
			for _, o := range it.Offerings {
				set[o.Zone] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for z := range set {
		out = append(out, z)
	}
	sort.Strings(out)
	return out
}

// provisionVolume makes the claim a volume of the class, in zone ("" for
// one every zone reaches), and binds the claim to it.
func (e *simulation) provisionVolume(pvc *corev1.PersistentVolumeClaim, sc *storagev1.StorageClass, zone string) {
	e.vol.bound[zone]++
	e.vol.seq++
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pv-%05d", e.vol.seq),
		ResourceVersion: e.nextRV(), CreationTimestamp: metav1.NewTime(e.clk.now)},
		Spec: corev1.PersistentVolumeSpec{StorageClassName: sc.Name, Capacity: pvc.Spec.Resources.Requests, AccessModes: pvc.Spec.AccessModes,
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: pvc.Namespace, Name: pvc.Name}},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound}}
	if zone != "" {
		pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: v1.LabelZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}}}}}}
	}
	e.st.SetPersistentVolume(pv)
	e.trace(trace.OpAdd, "PersistentVolume", pv)
	bound := pvc.DeepCopy()
	bound.Spec.VolumeName = pv.Name
	if bound.Annotations == nil {
		bound.Annotations = map[string]string{}
	}
	bound.Annotations[annBindCompleted] = "yes"
	bound.Status.Phase = corev1.ClaimBound
	e.setClaim(bound)
}
