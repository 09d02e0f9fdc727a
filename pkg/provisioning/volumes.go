package provisioning

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// Volumes is what pods' PersistentVolumeClaims ask of the node they run
// on, by claim ("namespace/name", see ClaimKeys), as upstream's volume
// topology reads it: a bound claim's PersistentVolume pins its node
// affinity (a zone, typically); an unbound claim of a
// WaitForFirstConsumer StorageClass takes the class's allowedTopologies;
// a claim that cannot bind to a new node (unbound with Immediate binding,
// being deleted, lost, or missing) holds its pods back. pkg/state fills it
// from the cluster's claims, volumes and classes.
type Volumes struct {
	// Requirements are the node requirements of a claim's volume.
	Requirements map[string]scheduling.Requirements
	// Waiting says why a claim's pods cannot be provisioned for yet.
	Waiting map[string]string
}

// Empty: no claim asks anything.
func (v Volumes) Empty() bool { return len(v.Requirements) == 0 && len(v.Waiting) == 0 }

// ClaimKeys are the claims ("namespace/name") of the pod's volumes: a
// persistentVolumeClaim volume's claimName, and for an ephemeral volume
// the claim its controller makes, "<pod>-<volume>".
func ClaimKeys(pod *corev1.Pod) []string {
	var out []string
	for _, v := range pod.Spec.Volumes {
		if name := ClaimName(pod, v); name != "" {
			out = append(out, pod.Namespace+"/"+name)
		}
	}
	return out
}

// ClaimName is the claim a volume of the pod uses, or "" for none.
func ClaimName(pod *corev1.Pod, v corev1.Volume) string {
	switch {
	case v.PersistentVolumeClaim != nil:
		return v.PersistentVolumeClaim.ClaimName
	case v.Ephemeral != nil:
		return pod.Name + "-" + v.Name
	}
	return ""
}

// of merges into reqs what the pod's claims require, and says why the pod
// waits ("" when it does not).
func (v Volumes) of(pod *corev1.Pod, reqs scheduling.Requirements) (waiting string) {
	if v.Empty() {
		return ""
	}
	for _, k := range ClaimKeys(pod) {
		if w, ok := v.Waiting[k]; ok && waiting == "" {
			waiting = w
		}
		if r, ok := v.Requirements[k]; ok {
			reqs.Merge(r)
		}
	}
	return waiting
}

// volumeWait is a class's pods waiting on their claims.
type volumeWait string

func (w volumeWait) Error() string { return string(w) }

// invalidReason is the one-line reason of a class that is not scheduled
// at all: its constraints cannot be read, or its volumes hold it.
func (c *podClass) invalidReason() string {
	if w, ok := c.invalid.(volumeWait); ok {
		return "waits for its volumes: " + string(w)
	}
	if r, ok := c.invalid.(*Reason); ok {
		return r.Error()
	}
	return "its constraints cannot be read: " + c.invalid.Error()
}

// Key is the volumes' content, for caches keyed by what a decision read:
// equal keys, equal Volumes ("" when empty).
func (v Volumes) Key() string {
	if v.Empty() {
		return ""
	}
	keys := make([]string, 0, len(v.Requirements)+len(v.Waiting))
	for k := range v.Requirements {
		keys = append(keys, k)
	}
	for k := range v.Waiting {
		if _, ok := v.Requirements[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(0)
		if r, ok := v.Requirements[k]; ok {
			b.WriteString(r.CacheKey())
		}
		b.WriteByte(0)
		b.WriteString(v.Waiting[k])
		b.WriteByte(0)
	}
	return b.String()
}
