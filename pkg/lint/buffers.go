package lint

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joiner-autoscaler/joiner/pkg/apis/autoscaling/v1beta1"
	"github.com/joiner-autoscaler/joiner/pkg/manifest"
	"github.com/joiner-autoscaler/joiner/pkg/podutil"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// bufferFindings checks the set's CapacityBuffers against what upstream's
// buffer controller does with them: a reference it cannot find (JNR016)
// and settings it ignores or refuses (JNR017).
func bufferFindings(s *set) []Finding {
	templates := map[string]*object{} // kind/namespace/name
	for _, o := range s.objects {
		if o.target != nil {
			templates[o.doc.Kind+"/"+podutil.Namespace(metav1.ObjectMeta{Namespace: o.doc.Namespace})+"/"+o.doc.Name] = o
		}
	}
	var fs []Finding
	for _, o := range s.objects {
		cb := o.buffer
		if cb == nil {
			continue
		}
		d := o.doc
		var target *object
		switch ref := cb.Spec.ScalableRef; {
		case cb.Spec.PodTemplateRef != nil:
			target = templates["PodTemplate/"+cb.Namespace+"/"+cb.Spec.PodTemplateRef.Name]
			if target == nil {
				fs = append(fs, finding(d, RuleBufferDanglingRef, "spec.podTemplateRef.name",
					fmt.Sprintf("PodTemplate %s/%s is not in these manifests (%s): the buffer is not ReadyForProvisioning (PodTemplateNotFound) and holds nothing until it exists", cb.Namespace, cb.Spec.PodTemplateRef.Name, s.name),
					"add the PodTemplate beside the buffer, in its namespace, or name one that is"))
			}
			if cb.Spec.Percentage != nil {
				fs = append(fs, finding(d, RuleBufferIgnoredSetting, "spec.percentage",
					"percentage is a share of a scalableRef's replicas: a podTemplateRef buffer ignores it", "set replicas (or limits) instead, or point scalableRef at the workload"))
			}
		case ref != nil && (ref.APIGroup != "" && ref.APIGroup != "apps" || !supportedKind(ref.Kind)):
			fs = append(fs, finding(d, RuleBufferIgnoredSetting, "spec.scalableRef",
				fmt.Sprintf("scalableRef %s %s cannot be resolved: upstream reads only apps Deployments, StatefulSets and ReplicaSets, so the buffer is not ReadyForProvisioning (ResolutionFailed)", strings.TrimPrefix(ref.APIGroup+"/"+ref.Kind, "/"), ref.Name),
				"point scalableRef at a Deployment, StatefulSet or ReplicaSet (apiGroup: apps), or shape the chunk with a podTemplateRef"))
		case ref != nil && ref.Kind != "ReplicaSet": // ReplicaSets are made by Deployments, not kept in Git
			target = templates[ref.Kind+"/"+cb.Namespace+"/"+ref.Name]
			if target == nil {
				fs = append(fs, finding(d, RuleBufferDanglingRef, "spec.scalableRef.name",
					fmt.Sprintf("%s %s/%s is not in these manifests (%s): the buffer is not ReadyForProvisioning (ScalableRefNotFound) and holds nothing until it exists", ref.Kind, cb.Namespace, ref.Name, s.name),
					"add the workload beside the buffer, in its namespace, or name one that is"))
			}
		}
		if target != nil && len(cb.Spec.Limits) > 0 {
			fs = append(fs, unrequestedLimits(d, cb, &target.target.Template)...)
		}
	}
	return fs
}

func supportedKind(kind string) bool {
	return kind == "Deployment" || kind == "StatefulSet" || kind == "ReplicaSet"
}

// unrequestedLimits: limits on resources the chunk does not request cap
// nothing; when none is requested the limits are ignored whole.
func unrequestedLimits(d *manifest.Document, cb *v1beta1.CapacityBuffer, tmpl *corev1.PodTemplateSpec) []Finding {
	requests := scheduling.PodRequests(&corev1.Pod{Spec: tmpl.Spec})
	var idle []string
	for name := range cb.Spec.Limits {
		if q, ok := requests[name]; !ok || q.IsZero() {
			idle = append(idle, string(name))
		}
	}
	if len(idle) == 0 {
		return nil
	}
	sort.Strings(idle)
	return []Finding{finding(d, RuleBufferIgnoredSetting, "spec.limits",
		fmt.Sprintf("limits on %s cap nothing: a chunk does not request it", strings.Join(idle, ", ")),
		"limit what the chunk's containers request (cpu, memory), or add the request to its template")}
}
