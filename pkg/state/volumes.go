package state

import (
	"fmt"
	"maps"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/joiner-autoscaler/joiner/pkg/podutil"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// defaultClassAnnotation marks the StorageClass the DefaultStorageClass
// admission plugin gives a claim that names none.
const defaultClassAnnotation = "storageclass.kubernetes.io/is-default-class"

// volumeObjects are the claims, volumes and classes a Store holds.
type volumeObjects struct {
	claims  map[string]*corev1.PersistentVolumeClaim // by namespace/name
	volumes map[string]*corev1.PersistentVolume
	classes map[string]*storagev1.StorageClass
	// complete: these are all there are (see Objects.VolumesComplete).
	complete bool
	// built is the provisioning view of them; nil when something changed.
	built *provisioning.Volumes
}

// SetPersistentVolumeClaim adds or replaces a claim.
func (s *Store) SetPersistentVolumeClaim(pvc *corev1.PersistentVolumeClaim) {
	s.mu.Lock()
	defer s.mu.Unlock()
	setIn(&s.vol.claims, podutil.Namespace(pvc.ObjectMeta)+"/"+pvc.Name, pvc)
	s.vol.built = nil
}

// DeletePersistentVolumeClaim forgets a claim.
func (s *Store) DeletePersistentVolumeClaim(namespace, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if namespace == "" {
		namespace = corev1.NamespaceDefault
	}
	delete(s.vol.claims, namespace+"/"+name)
	s.vol.built = nil
}

// SetPersistentVolume adds or replaces a volume.
func (s *Store) SetPersistentVolume(pv *corev1.PersistentVolume) {
	s.mu.Lock()
	defer s.mu.Unlock()
	setIn(&s.vol.volumes, pv.Name, pv)
	s.vol.built = nil
}

// DeletePersistentVolume forgets a volume.
func (s *Store) DeletePersistentVolume(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.vol.volumes, name)
	s.vol.built = nil
}

// SetStorageClass adds or replaces a StorageClass.
func (s *Store) SetStorageClass(sc *storagev1.StorageClass) {
	s.mu.Lock()
	defer s.mu.Unlock()
	setIn(&s.vol.classes, sc.Name, sc)
	s.vol.built = nil
}

// DeleteStorageClass forgets a StorageClass.
func (s *Store) DeleteStorageClass(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.vol.classes, name)
	s.vol.built = nil
}

// SetVolumesComplete says whether the host hands the Store every claim,
// volume and StorageClass there is (a controller once its informers have
// synced): a claim, volume or class it has not seen then holds its pods
// back, as upstream's; otherwise one not seen asks nothing.
func (s *Store) SetVolumesComplete(complete bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.vol.complete = complete
	s.vol.built = nil
}

// Volumes are what the pods' claims require of their nodes, and the claims
// that hold their pods back (see provisioning.Volumes).
func (s *Store) Volumes() provisioning.Volumes {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.volumesLocked()
}

func (s *Store) volumesLocked() provisioning.Volumes {
	if s.vol.built != nil {
		return *s.vol.built
	}
	v := &provisioning.Volumes{}
	s.vol.built = v
	if len(s.vol.claims) == 0 && !s.vol.complete {
		return *v
	}
	add := func(key string, reqs scheduling.Requirements, waiting string) {
		switch {
		case waiting != "":
			if v.Waiting == nil {
				v.Waiting = map[string]string{}
			}
			v.Waiting[key] = waiting
		case len(reqs) > 0:
			if v.Requirements == nil {
				v.Requirements = map[string]scheduling.Requirements{}
			}
			v.Requirements[key] = reqs
		}
	}
	for key, pvc := range s.vol.claims {
		reqs, waiting := s.claimTopology(key, pvc)
		add(key, reqs, waiting)
	}
	if !s.vol.complete {
		return *v
	}
	// Claims the pending pods use that the Store has not seen: an
	// ephemeral volume's is made from its template when the pod is (so it
	// is an unbound claim of the template's class); any other is missing.
	for ref := range s.unbound {
		p := s.pods[ref].pod
		for _, vol := range p.Spec.Volumes {
			name := provisioning.ClaimName(p, vol)
			key := p.Namespace + "/" + name
			if name == "" || s.vol.claims[key] != nil {
				continue
			}
			if e := vol.Ephemeral; e != nil && e.VolumeClaimTemplate != nil {
				pvc := &corev1.PersistentVolumeClaim{Spec: e.VolumeClaimTemplate.Spec}
				pvc.Name, pvc.Namespace = name, p.Namespace
				reqs, waiting := s.claimTopology(key, pvc)
				add(key, reqs, waiting)
				continue
			}
			add(key, nil, fmt.Sprintf("PersistentVolumeClaim %s not found", key))
		}
	}
	return *v
}

// claimTopology is what one claim requires of its pods' node, or why they
// wait, as upstream's volume topology and its claim validation read it.
func (s *Store) claimTopology(key string, pvc *corev1.PersistentVolumeClaim) (scheduling.Requirements, string) {
	switch {
	case pvc.DeletionTimestamp != nil:
		return nil, fmt.Sprintf("PersistentVolumeClaim %s is being deleted", key)
	case pvc.Status.Phase == corev1.ClaimLost:
		return nil, fmt.Sprintf("PersistentVolumeClaim %s is Lost: its PersistentVolume %s no longer exists", key, pvc.Spec.VolumeName)
	case pvc.Spec.VolumeName != "":
		pv := s.vol.volumes[pvc.Spec.VolumeName]
		switch {
		case pv == nil && s.vol.complete:
			return nil, fmt.Sprintf("PersistentVolumeClaim %s is bound to PersistentVolume %s, which is not found", key, pvc.Spec.VolumeName)
		case pv == nil:
			return nil, ""
		case pv.DeletionTimestamp != nil:
			return nil, fmt.Sprintf("PersistentVolume %s of PersistentVolumeClaim %s is being deleted", pv.Name, key)
		}
		return volumeRequirements(pv), ""
	}
	name := s.className(pvc)
	if name == "" {
		return nil, fmt.Sprintf("PersistentVolumeClaim %s is unbound and names no StorageClass (and none is the default)", key)
	}
	sc := s.vol.classes[name]
	if sc == nil {
		if s.vol.complete {
			return nil, fmt.Sprintf("PersistentVolumeClaim %s names StorageClass %s, which is not found", key, name)
		}
		return nil, ""
	}
	if sc.VolumeBindingMode == nil || *sc.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
		return nil, fmt.Sprintf("PersistentVolumeClaim %s is unbound and StorageClass %s binds Immediate: its pods wait until it is bound", key, name)
	}
	return classRequirements(sc), ""
}

// className is the claim's StorageClass: its own, or the default class
// the admission plugin would have given it (the newest of several).
func (s *Store) className(pvc *corev1.PersistentVolumeClaim) string {
	if pvc.Spec.StorageClassName != nil {
		return *pvc.Spec.StorageClassName
	}
	return DefaultStorageClass(slices.Collect(maps.Values(s.vol.classes)))
}

// DefaultStorageClass is the StorageClass the DefaultStorageClass
// admission plugin gives a claim that names none: the newest of those
// marked default, then by name ("" for none).
func DefaultStorageClass(classes []*storagev1.StorageClass) string {
	var defaults []*storagev1.StorageClass
	for _, sc := range classes {
		if sc.Annotations[defaultClassAnnotation] == "true" {
			defaults = append(defaults, sc)
		}
	}
	if len(defaults) == 0 {
		return ""
	}
	sort.Slice(defaults, func(i, j int) bool {
		a, b := defaults[i], defaults[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.After(b.CreationTimestamp.Time)
		}
		return a.Name < b.Name
	})
	return defaults[0].Name
}

// volumeRequirements are a bound volume's node affinity: its first term,
// as upstream reads it (terms are alternatives). A local or hostPath
// volume's hostname is left out: a pod that moves gets a new volume.
func volumeRequirements(pv *corev1.PersistentVolume) scheduling.Requirements {
	na := pv.Spec.NodeAffinity
	if na == nil || na.Required == nil || len(na.Required.NodeSelectorTerms) == 0 {
		return nil
	}
	var exprs []corev1.NodeSelectorRequirement
	for _, e := range na.Required.NodeSelectorTerms[0].MatchExpressions {
		if e.Key == corev1.LabelHostname && (pv.Spec.Local != nil || pv.Spec.HostPath != nil) {
			continue
		}
		exprs = append(exprs, e)
	}
	return scheduling.FromCoreNodeSelectorRequirements(exprs)
}

// classRequirements are a WaitForFirstConsumer class's allowedTopologies:
// its first term, as upstream reads it.
func classRequirements(sc *storagev1.StorageClass) scheduling.Requirements {
	if len(sc.AllowedTopologies) == 0 {
		return nil
	}
	var exprs []corev1.NodeSelectorRequirement
	for _, e := range sc.AllowedTopologies[0].MatchLabelExpressions {
		exprs = append(exprs, corev1.NodeSelectorRequirement{Key: e.Key, Operator: corev1.NodeSelectorOpIn, Values: e.Values})
	}
	return scheduling.FromCoreNodeSelectorRequirements(exprs)
}

// hasClaims: a volume of the pod is a claim's (see provisioning.ClaimName).
func hasClaims(p *corev1.Pod) bool {
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			return true
		}
	}
	return false
}
